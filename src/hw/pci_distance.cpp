#include "hw/pci_distance.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace gpuaccept {
namespace fs = std::filesystem;

const char* to_string(PciDistance d) {
  switch (d) {
    case PciDistance::Pix: return "PIX";
    case PciDistance::Pxb: return "PXB";
    case PciDistance::Phb: return "PHB";
    case PciDistance::Node: return "NODE";
    case PciDistance::Sys: return "SYS";
    case PciDistance::Unknown: break;
  }
  return "";
}

std::string normalize_bus_id(const std::string& bus_id) {
  std::string s = bus_id;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // NVML writes an 8-digit domain ("00000000:18:00.0"); sysfs a 4-digit one.
  const auto colon = s.find(':');
  if (colon != std::string::npos && colon > 4) s = s.substr(colon - 4);
  return s;
}

std::vector<std::string> pci_chain(const std::string& bus_id, const std::string& pci_devices) {
  if (bus_id.empty()) return {};
  std::error_code ec;
  const fs::path real = fs::canonical(fs::path(pci_devices) / normalize_bus_id(bus_id), ec);
  if (ec) return {};
  // .../devices/pci0000:17/0000:17:01.0/...: what follows the last "devices" component, from
  // the root complex ("pci<domain>:<bus>") down.
  std::vector<std::string> chain;
  for (const auto& part : real) {
    const std::string p = part.string();
    if (p == "devices") chain.clear();
    else chain.push_back(p);
  }
  if (chain.empty() || !chain.front().starts_with("pci")) return {};
  return chain;
}

PciDistance pci_distance(const std::vector<std::string>& a, int numa_a, const std::vector<std::string>& b, int numa_b) {
  if (a.empty() || b.empty()) return PciDistance::Unknown;
  if (a.front() != b.front()) return numa_a >= 0 && numa_b >= 0 && numa_a != numa_b ? PciDistance::Sys : PciDistance::Node;
  std::size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  if (common <= 1) return PciDistance::Phb;  // only the root complex in common
  // A common bridge below the root port: one switch between them when each is at most two
  // levels below it (the switch's up-port, then a down-port, then the function).
  if (common >= 3 && a.size() - common <= 2 && b.size() - common <= 2) return PciDistance::Pix;
  return PciDistance::Pxb;
}

void assign_nearest_gpus(std::vector<RdmaPort>& ports, const std::vector<GpuLocation>& gpus, const std::string& pci_devices) {
  std::vector<std::vector<std::string>> gpu_chains;
  for (const auto& g : gpus) gpu_chains.push_back(pci_chain(g.pci_bus_id, pci_devices));
  for (auto& p : ports) {
    p.nearest_gpus.clear();
    p.gpu_distance.clear();
    const auto chain = pci_chain(p.pci_bus_id, pci_devices);
    PciDistance best = PciDistance::Unknown;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      const PciDistance d = pci_distance(chain, p.numa_node, gpu_chains[i], gpus[i].numa_node);
      if (d == PciDistance::Unknown) continue;
      if (d < best) {
        best = d;
        p.nearest_gpus.clear();
      }
      if (d == best) p.nearest_gpus.push_back(gpus[i].index);
    }
    p.gpu_distance = to_string(best);
  }
}

std::vector<std::size_t> ports_nearest_to(const GpuLocation& gpu, const std::vector<RdmaPort>& ports,
                                          const std::string& pci_devices) {
  const auto gpu_chain = pci_chain(gpu.pci_bus_id, pci_devices);
  std::vector<std::size_t> out;
  PciDistance best = PciDistance::Unknown;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    if (!ports[i].active()) continue;
    PciDistance d = pci_distance(gpu_chain, gpu.numa_node, pci_chain(ports[i].pci_bus_id, pci_devices), ports[i].numa_node);
    if (out.empty() || d < best) {
      best = d;
      out.clear();
    }
    if (d == best) out.push_back(i);
  }
  return out;
}

}  // namespace gpuaccept
