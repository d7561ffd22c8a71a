#include "hw/socket_interface.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace gpuaccept {
namespace fs = std::filesystem;

namespace {

double speed_gbps(const std::string& sys_class_net, const std::string& name) {
  std::ifstream in(fs::path(sys_class_net) / name / "speed");
  long mbps = 0;
  if (!(in >> mbps) || mbps <= 0) return 0;
  return mbps / 1000.0;
}

// NCCL's interface list syntax: comma separated prefixes; "^" excludes, "=" exact.
bool selected(const std::string& spec_in, const std::string& name) {
  std::string spec = spec_in;
  const bool exclude = !spec.empty() && spec.front() == '^';
  if (exclude) spec.erase(0, 1);
  const bool exact = !spec.empty() && spec.front() == '=';
  if (exact) spec.erase(0, 1);
  bool listed = false;
  std::stringstream in(spec);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty() && (exact ? name == item : name.starts_with(item))) listed = true;
  return listed != exclude;
}

}  // namespace

SocketInterface socket_interface(const std::string& nccl_socket_ifname, const std::string& proc_net_route,
                                 const std::string& sys_class_net) {
  SocketInterface out;
  if (!nccl_socket_ifname.empty()) {
    std::error_code ec;
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(sys_class_net, ec)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    for (const auto& n : names)
      if (n != "lo" && selected(nccl_socket_ifname, n)) {
        out.name = n;
        break;
      }
  } else {
    // /proc/net/route: "Iface Destination Gateway ...", hex; the default route has destination 0.
    std::ifstream in(proc_net_route);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string iface, dest;
      if (f >> iface >> dest && dest == "00000000") {
        out.name = iface;
        break;
      }
    }
  }
  if (!out.name.empty()) out.gbps = speed_gbps(sys_class_net, out.name);
  return out;
}

}  // namespace gpuaccept
