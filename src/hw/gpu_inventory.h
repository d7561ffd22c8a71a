// GpuInventory: the GPUs this rank can see (CUDA's view, which honours
// CUDA_VISIBLE_DEVICES) described through NVML, plus the node's whole GPU set and
// its GPU-to-GPU link matrix. Without a driver, `reason` says why the list is empty.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/pci_distance.h"

namespace gpuaccept {

struct NvLink {
  int link = 0;
  bool active = false;
  std::string remote_bus_id;  // "" when inactive
  std::string remote_type;    // "gpu" (direct), "switch" (through NVSwitch), ...
};

struct GpuInfo {
  int cuda_index = -1;  // as this rank sees it; -1 for GPUs not visible to it
  int nvml_index = -1;
  int node_index = -1;  // on its node, as nvidia-smi numbers it (hw/node_gpu_index.h): what records name
  std::string name, uuid, pci_bus_id;
  unsigned long long memory_bytes = 0;
  std::string compute_capability;  // "9.0"
  std::optional<bool> mig_enabled, ecc_enabled;
  std::optional<unsigned> numa_node;
  std::vector<NvLink> nvlinks;
  // What a threshold file's absolute floors assume of a GPU (configs/thresholds, `gpu:`):
  std::optional<double> power_limit_w;          // in force (an operator may cap it below the default)
  std::optional<double> default_power_limit_w;  // the board's (700 W for an H100 or H200 SXM)
  std::optional<unsigned> module_id;            // NVML's baseboard module: 1-8 SXM, 0 a card
  std::string form_factor;                      // gpu_form_factor(name, module_id)
};

// "SXM", "PCIe" or "NVL" from what NVML reports, "" when it cannot tell: the name when it says
// ("NVIDIA H100 PCIe", "NVIDIA H200 NVL", "NVIDIA A100-SXM4-80GB"), else the module id (a
// module on a baseboard is SXM; 0, a product without a baseboard, is a PCIe card).
std::string gpu_form_factor(const std::string& name, std::optional<unsigned> module_id);

struct GpuInventory {
  std::string reason;  // non-empty when no GPU could be described, e.g. "NVML not loadable: ..."
  std::string driver_version;
  std::string cuda_driver_version;   // "13.0" (what the driver supports)
  std::string cuda_runtime_version;  // "13.0" (what this binary runs with)
  std::vector<GpuInfo> visible;      // this rank's GPUs, by CUDA index
  std::vector<GpuInfo> node_gpus;    // every GPU NVML sees on the node, by NVML index
  // nvlink_matrix[i][j]: NVLinks joining node GPUs i and j, as `nvidia-smi topo -m`
  // counts them (direct links, or on NVSwitch systems the links both GPUs have to the
  // switches); pcie_matrix[i][j]: the PCIe path.
  std::vector<std::vector<int>> nvlink_matrix;
  std::vector<std::vector<std::string>> pcie_matrix;
};

GpuInventory read_gpu_inventory();

// Where a GPU sits on the PCI tree, for hw/pci_distance.h (its node index, bus id, NUMA node).
GpuLocation location_of(const GpuInfo& g);
std::vector<GpuLocation> locations_of(const std::vector<GpuInfo>& gpus);

// "13000" -> "13.0"
std::string format_cuda_version(int v);

void to_json(nlohmann::json& j, const GpuInfo& g);
void to_json(nlohmann::json& j, const GpuInventory& g);

}  // namespace gpuaccept
