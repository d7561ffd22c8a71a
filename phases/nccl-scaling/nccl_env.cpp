#include "nccl-scaling/nccl_env.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nccl.h>

extern char** environ;

namespace gpuaccept::nccl_scaling {

std::map<std::string, std::string> nccl_environment() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    if (!kv.starts_with("NCCL_")) continue;
    const auto eq = kv.find('=');
    out[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
  }
  return out;
}

std::map<std::string, std::string> nccl_config_files() {
  std::map<std::string, std::string> out;
  std::vector<std::string> paths;
  if (const char* f = std::getenv("NCCL_CONF_FILE")) paths.emplace_back(f);
  if (const char* home = std::getenv("HOME")) paths.push_back(std::string(home) + "/.nccl.conf");
  paths.emplace_back("/etc/nccl.conf");
  for (const auto& p : paths) {
    std::ifstream in(p);
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    out[p] = text.str();
  }
  return out;
}

std::string nccl_header_version() { return fmt::format("{}.{}.{}", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH); }

}  // namespace gpuaccept::nccl_scaling
