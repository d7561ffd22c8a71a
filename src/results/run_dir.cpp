#include "results/run_dir.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <unistd.h>

#include "common/error.h"

namespace gpuaccept {
namespace fs = std::filesystem;

namespace {
std::string get(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v ? std::string(v) : std::string();
}
}  // namespace

EnvLookup process_env() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

fs::path results_root(const std::string& flag, const EnvLookup& env) {
  if (!flag.empty()) return flag;
  if (auto v = get(env, "GPUACCEPT_RESULTS"); !v.empty()) return v;
  return "results";
}

std::string resolve_run_id(const std::string& flag, const EnvLookup& env) {
  std::string id = flag, source = "--run-id";
  if (id.empty())
    for (const char* name : {"GPUACCEPT_RUN_ID", "SLURM_ARRAY_JOB_ID", "SLURM_JOB_ID"})
      if (auto v = get(env, name); !v.empty()) {
        id = v;
        source = std::string("$") + name;
        break;
      }
  if (id.empty()) return id;
  const auto safe = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  };
  std::string why;
  if (id.size() > 128) why = fmt::format("{} characters, at most 128", id.size());
  else if (id.front() == '.' || id.front() == '-') why = fmt::format("starts with '{}'", id.front());
  else if (const auto bad = std::find_if_not(id.begin(), id.end(), safe); bad != id.end())
    why = fmt::format("character {:#04x} at position {}", static_cast<unsigned char>(*bad), bad - id.begin());
  if (!why.empty())
    throw InputError(fmt::format("run id from {} is not one safe directory name ({}): use A-Z a-z 0-9 . _ - only, "
                                 "not starting with '.' or '-'",
                                 source, why));
  return id;
}

std::string make_local_run_id() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return fmt::format("local-{}-{}", buf, ::getpid());
}

void prepare_run_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw InputError(fmt::format("results directory {} cannot be created: {}", dir.string(), ec.message()));
  const fs::path probe = dir / fmt::format(".write-probe.{}", ::getpid());
  {
    std::ofstream out(probe);
    out << "probe\n";
    out.flush();
    if (!out) {
      const std::string why = std::strerror(errno);
      throw InputError(fmt::format("results directory {} is not writable: {}", dir.string(), why));
    }
  }
  fs::remove(probe, ec);
}

}  // namespace gpuaccept
