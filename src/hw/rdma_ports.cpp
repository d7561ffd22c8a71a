#include "hw/rdma_ports.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

namespace gpuaccept {
namespace fs = std::filesystem;

namespace {

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

bool RdmaPort::active() const {
  return state.find("ACTIVE") != std::string::npos && phys_state.find("LinkUp") != std::string::npos;
}

std::string RdmaPort::name() const { return device + "/" + std::to_string(port); }

double parse_rate_gbps(const std::string& rate) {
  char* end = nullptr;
  const double v = std::strtod(rate.c_str(), &end);
  if (end == rate.c_str() || v <= 0) return 0;
  return v;
}

std::vector<RdmaPort> read_rdma_ports(const std::string& sysfs_root) {
  std::vector<RdmaPort> out;
  std::error_code ec;
  for (const auto& dev : fs::directory_iterator(sysfs_root, ec)) {
    // device -> the PCI function; a soft-RoCE device (rxe) has none.
    std::string pci;
    int numa = -1;
    std::vector<std::string> netdevs;
    const fs::path function = dev.path() / "device";
    if (fs::exists(function, ec)) {
      pci = fs::canonical(function, ec).filename().string();
      if (ec) pci.clear();
      const std::string n = read_line(function / "numa_node");
      if (!n.empty()) numa = std::atoi(n.c_str());
      for (const auto& nd : fs::directory_iterator(function / "net", ec)) netdevs.push_back(nd.path().filename().string());
      std::sort(netdevs.begin(), netdevs.end());
    }
    for (const auto& port : fs::directory_iterator(dev.path() / "ports", ec)) {
      RdmaPort p;
      p.device = dev.path().filename().string();
      try {
        p.port = std::stoi(port.path().filename().string());
      } catch (const std::exception&) {
        continue;
      }
      p.state = read_line(port.path() / "state");
      p.phys_state = read_line(port.path() / "phys_state");
      p.rate = read_line(port.path() / "rate");
      p.rate_gbps = parse_rate_gbps(p.rate);
      p.link_layer = read_line(port.path() / "link_layer");
      p.pci_bus_id = pci;
      p.numa_node = numa;
      p.netdevs = netdevs;
      out.push_back(std::move(p));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const RdmaPort& a, const RdmaPort& b) { return std::tie(a.device, a.port) < std::tie(b.device, b.port); });
  return out;
}

std::vector<RdmaPort> ports_nccl_may_use(const std::vector<RdmaPort>& ports, const std::string& nccl_ib_hca) {
  if (nccl_ib_hca.empty()) return ports;
  std::string spec = nccl_ib_hca;
  const bool exclude = spec.front() == '^';
  if (exclude) spec.erase(0, 1);
  const bool exact = !spec.empty() && spec.front() == '=';
  if (exact) spec.erase(0, 1);
  const auto entries = split(spec, ',');
  auto listed = [&](const RdmaPort& p) {
    for (const auto& e : entries) {
      const auto colon = e.find(':');
      const std::string dev = e.substr(0, colon);
      const bool dev_match = exact ? p.device == dev : p.device.starts_with(dev);
      if (!dev_match) continue;
      if (colon == std::string::npos || std::atoi(e.c_str() + colon + 1) == p.port) return true;
    }
    return false;
  };
  std::vector<RdmaPort> out;
  for (const auto& p : ports)
    if (listed(p) != exclude) out.push_back(p);
  return out;
}

const std::vector<std::string>& error_counter_names() {
  static const std::vector<std::string> names = {
      "link_downed",         "link_error_recovery",          "symbol_error",
      "port_rcv_errors",     "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
      "local_link_integrity_errors", "excessive_buffer_overrun_errors"};
  return names;
}

PortCounters read_port_counters(const std::string& sysfs_root) {
  PortCounters out;
  for (const auto& p : read_rdma_ports(sysfs_root)) {
    auto& counters = out[p.name()];  // a port without counters still appears, empty
    const fs::path dir = fs::path(sysfs_root) / p.device / "ports" / std::to_string(p.port) / "counters";
    for (const auto& name : error_counter_names()) {
      const std::string text = read_line(dir / name);
      if (text.empty()) continue;
      char* end = nullptr;
      const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
      if (end != text.c_str()) counters[name] = v;
    }
  }
  return out;
}

void to_json(nlohmann::json& j, const RdmaPort& p) {
  j = {{"device", p.device},         {"port", p.port},
       {"state", p.state},           {"phys_state", p.phys_state},
       {"rate", p.rate},             {"rate_gbps", p.rate_gbps},
       {"link_layer", p.link_layer}, {"pci_bus_id", p.pci_bus_id},
       {"numa_node", p.numa_node},   {"netdevs", p.netdevs},
       {"nearest_gpus", p.nearest_gpus}, {"gpu_distance", p.gpu_distance},
       {"active", p.active()}};
}

}  // namespace gpuaccept
