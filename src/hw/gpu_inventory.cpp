#include "hw/gpu_inventory.h"

#include <algorithm>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "hw/node_gpu_index.h"
#include "hw/nvml.h"

namespace gpuaccept {

std::string format_cuda_version(int v) { return v > 0 ? fmt::format("{}.{}", v / 1000, (v % 1000) / 10) : ""; }

std::string gpu_form_factor(const std::string& name, std::optional<unsigned> module_id) {
  if (name.find("PCIe") != std::string::npos) return "PCIe";
  if (name.find(" NVL") != std::string::npos) return "NVL";
  if (name.find("SXM") != std::string::npos) return "SXM";
  if (!module_id) return "";
  return *module_id > 0 ? "SXM" : "PCIe";
}

namespace {

GpuInfo describe(const Nvml& nvml, Nvml::Device d) {
  GpuInfo g;
  g.name = nvml.name(d);
  g.uuid = nvml.uuid(d);
  g.pci_bus_id = nvml.pci_bus_id(d);
  g.memory_bytes = nvml.memory_total(d).value_or(0);
  if (auto cc = nvml.compute_capability(d)) g.compute_capability = fmt::format("{}.{}", cc->first, cc->second);
  g.mig_enabled = nvml.mig_enabled(d);
  g.ecc_enabled = nvml.ecc_enabled(d);
  g.numa_node = nvml.numa_node(d);
  if (auto mw = nvml.power_limit_mw(d)) g.power_limit_w = *mw / 1000.0;
  if (auto mw = nvml.default_power_limit_mw(d)) g.default_power_limit_w = *mw / 1000.0;
  g.module_id = nvml.module_id(d);
  g.form_factor = gpu_form_factor(g.name, g.module_id);
  const auto states = nvml.nvlink_states(d);
  for (unsigned link = 0; link < states.size(); ++link) {
    if (!states[link]) continue;
    NvLink l{static_cast<int>(link), *states[link], "", ""};
    if (l.active) {
      l.remote_bus_id = nvml.nvlink_remote_bus_id(d, link);
      l.remote_type = nvml.nvlink_remote_type(d, link);
    }
    g.nvlinks.push_back(l);
  }
  return g;
}

}  // namespace

GpuInventory read_gpu_inventory() {
  GpuInventory inv;
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) inv.cuda_runtime_version = format_cuda_version(runtime);

  Nvml& nvml = Nvml::instance();
  if (!nvml.available()) {
    inv.reason = nvml.reason();
    return inv;
  }
  inv.driver_version = nvml.driver_version();
  if (auto v = nvml.cuda_driver_version()) inv.cuda_driver_version = format_cuda_version(*v);

  std::vector<Nvml::Device> handles;
  for (int i = 0; i < nvml.device_count(); ++i) {
    auto d = nvml.device_by_index(static_cast<unsigned>(i));
    if (!d) continue;
    GpuInfo g = describe(nvml, *d);
    g.nvml_index = i;
    g.node_index = record_gpu_index(g.pci_bus_id, i, -1);
    inv.node_gpus.push_back(std::move(g));
    handles.push_back(*d);
  }
  const std::size_t n = handles.size();
  inv.nvlink_matrix.assign(n, std::vector<int>(n, 0));
  inv.pcie_matrix.assign(n, std::vector<std::string>(n, ""));
  std::vector<int> switch_links(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (const auto& l : inv.node_gpus[i].nvlinks) switch_links[i] += l.active && l.remote_type == "switch";
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& l : inv.node_gpus[i].nvlinks)
      for (std::size_t j = 0; j < n; ++j)
        if (l.active && j != i && same_pci_address(l.remote_bus_id, inv.node_gpus[j].pci_bus_id)) ++inv.nvlink_matrix[i][j];
    for (std::size_t j = 0; j < n; ++j)
      if (j != i) inv.nvlink_matrix[i][j] += std::min(switch_links[i], switch_links[j]);
    for (std::size_t j = 0; j < n; ++j) inv.pcie_matrix[i][j] = i == j ? "X" : nvml.pcie_path(handles[i], handles[j]);
  }

  int visible = 0;
  if (const cudaError_t rc = cudaGetDeviceCount(&visible); rc != cudaSuccess) {
    inv.reason = fmt::format("cudaGetDeviceCount failed: {}", cudaGetErrorString(rc));
    return inv;
  }
  for (int c = 0; c < visible; ++c) {
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, c) != cudaSuccess) continue;
    auto it = std::find_if(inv.node_gpus.begin(), inv.node_gpus.end(),
                           [&](const GpuInfo& g) { return same_pci_address(g.pci_bus_id, bus); });
    GpuInfo g = it != inv.node_gpus.end() ? *it : GpuInfo{};
    g.cuda_index = c;
    if (g.pci_bus_id.empty()) g.pci_bus_id = bus;
    if (g.node_index < 0) g.node_index = record_gpu_index(g.pci_bus_id, g.nvml_index, c);
    inv.visible.push_back(std::move(g));
  }
  if (inv.visible.empty() && inv.reason.empty()) inv.reason = "no GPU visible to this rank (CUDA device count 0)";
  return inv;
}

namespace {
template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
}  // namespace

GpuLocation location_of(const GpuInfo& g) {
  return {g.node_index >= 0 ? g.node_index : g.nvml_index, g.pci_bus_id, g.numa_node ? static_cast<int>(*g.numa_node) : -1};
}

std::vector<GpuLocation> locations_of(const std::vector<GpuInfo>& gpus) {
  std::vector<GpuLocation> out;
  for (const auto& g : gpus) out.push_back(location_of(g));
  return out;
}

void to_json(nlohmann::json& j, const GpuInfo& g) {
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : g.nvlinks)
    links.push_back({{"link", l.link}, {"active", l.active}, {"remote", l.remote_bus_id}, {"remote_type", l.remote_type}});
  j = {{"cuda_index", g.cuda_index}, {"nvml_index", g.nvml_index}, {"node_index", g.node_index}, {"name", g.name},
       {"uuid", g.uuid},             {"pci_bus_id", g.pci_bus_id}, {"memory_bytes", g.memory_bytes},
       {"compute_capability", g.compute_capability}, {"mig_enabled", opt(g.mig_enabled)},
       {"ecc_enabled", opt(g.ecc_enabled)},          {"numa_node", opt(g.numa_node)},
       {"nvlinks", links},                           {"power_limit_w", opt(g.power_limit_w)},
       {"default_power_limit_w", opt(g.default_power_limit_w)}, {"module_id", opt(g.module_id)},
       {"form_factor", g.form_factor}};
}

void to_json(nlohmann::json& j, const GpuInventory& g) {
  j = {{"reason", g.reason},
       {"driver_version", g.driver_version},
       {"cuda_driver_version", g.cuda_driver_version},
       {"cuda_runtime_version", g.cuda_runtime_version},
       {"visible", g.visible},
       {"node_gpus", g.node_gpus},
       {"nvlink_matrix", g.nvlink_matrix},
       {"pcie_matrix", g.pcie_matrix}};
}

}  // namespace gpuaccept
