#include "nccl-scaling/nccl_log.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace gpuaccept::nccl_scaling {

bool ObservedTransports::between_nodes() const {
  for (const auto& k : kinds)
    if (k.starts_with("NET/")) return true;
  return false;
}

bool ObservedTransports::over_sockets() const { return kinds.count("NET/Socket") > 0; }

bool ObservedTransports::ib_without_gdr() const { return kinds.count("NET/IB") > 0; }

std::string transport_kind(std::string_view via) {
  const auto at = via.find("via ");
  if (at == std::string_view::npos) return "";
  std::string_view t = via.substr(at + 4);
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.remove_suffix(1);
  if (t.starts_with("P2P")) return "P2P";
  if (t.starts_with("SHM")) return "SHM";
  if (!t.starts_with("NET/")) return "";
  // NET/<name>/<dev>[(<merged>)][/GDRDMA][/Shared]; a plugin's name may hold spaces.
  const std::string_view rest = t.substr(4);
  const std::string name(rest.substr(0, rest.find('/')));
  const bool gdr = t.find("/GDRDMA") != std::string_view::npos;
  return "NET/" + name + (gdr ? "/GDRDMA" : "");
}

ObservedTransports parse_nccl_log(std::string_view text) {
  ObservedTransports out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.find("NCCL WARN") != std::string_view::npos) {
      out.warnings.emplace_back(line);
      continue;
    }
    if (line.find("NCCL INFO") == std::string_view::npos) continue;
    if (line.find(" via ") != std::string_view::npos) {
      if (const std::string k = transport_kind(line); !k.empty()) out.kinds.insert(k);
      continue;
    }
    // "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>"
    for (const char* tag : {"NET/IB : Using ", "NET/Socket : Using "})
      if (const auto at = line.find(tag); at != std::string_view::npos) out.net_devices = std::string(line.substr(at + 4));
  }
  return out;
}

NcclLog::NcclLog(std::string path) : path_(std::move(path)) {
  if (std::getenv("NCCL_DEBUG") || std::getenv("NCCL_DEBUG_FILE")) {
    why_not_ = "NCCL_DEBUG or NCCL_DEBUG_FILE is set by the job: NCCL's own log is left to it";
    path_.clear();
    return;
  }
  // INIT carries the connection lines, NET the network devices chosen. Set before NCCL reads
  // its environment (at its first call), so no NCCL call may come before this.
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
  setenv("NCCL_DEBUG_FILE", path_.c_str(), 1);
}

NcclLog::~NcclLog() {
  if (!path_.empty()) std::remove(path_.c_str());
}

ObservedTransports NcclLog::read_new() {
  if (!observing()) return {};
  std::ifstream in(path_, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto last_newline = text.rfind('\n');
  if (last_newline == std::string::npos) return {};
  text.resize(last_newline + 1);  // a line still being written waits for the next call
  offset_ += text.size();
  return parse_nccl_log(text);
}

}  // namespace gpuaccept::nccl_scaling
