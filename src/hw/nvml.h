// Nvml: NVML loaded with dlopen("libnvidia-ml.so.1"). When the library or the driver
// is missing, available() is false and reason() says why; nothing crashes.
// Each query returns std::nullopt (or an empty value) when this GPU or driver does not
// support it, so callers record "not supported" instead of failing.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hw/nvml_api.h"

namespace gpuaccept {

class Nvml {
 public:
  // Loads and initialises NVML once per process.
  static Nvml& instance();

  bool available() const { return available_; }
  const std::string& reason() const { return reason_; }  // why not available

  std::string driver_version() const;
  std::optional<int> cuda_driver_version() const;  // e.g. 13000
  std::string nvml_version() const;
  int device_count() const;

  using Device = nvml_api::nvmlDevice_t;
  std::optional<Device> device_by_index(unsigned index) const;
  std::optional<Device> device_by_pci_bus_id(const std::string& bus_id) const;

  std::string name(Device d) const;
  std::string uuid(Device d) const;
  std::string pci_bus_id(Device d) const;
  std::optional<unsigned> index(Device d) const;  // NVML's own numbering (nvmlDeviceGetIndex)
  std::optional<unsigned long long> memory_total(Device d) const;
  std::optional<std::pair<int, int>> compute_capability(Device d) const;
  std::optional<bool> mig_enabled(Device d) const;
  std::optional<bool> ecc_enabled(Device d) const;
  std::optional<unsigned> numa_node(Device d) const;  // from sysfs when NVML lacks it
  // The power limit in force (nvmlDeviceGetEnforcedPowerLimit) and the board's default
  // (nvmlDeviceGetPowerManagementDefaultLimit), in milliwatts.
  std::optional<unsigned> power_limit_mw(Device d) const;
  std::optional<unsigned> default_power_limit_mw(Device d) const;
  // The GPU's module on its baseboard (nvmlDeviceGetModuleId, driver 535+): 1-8 on an HGX
  // baseboard (SXM), 0 for a product without one (a PCIe card).
  std::optional<unsigned> module_id(Device d) const;
  // Per link 0..17: active or not; nullopt where the link does not exist.
  std::vector<std::optional<bool>> nvlink_states(Device d) const;
  // The PCI bus id at the far end of an active link.
  std::string nvlink_remote_bus_id(Device d, unsigned link) const;
  // What the far end of a link is: "gpu", "switch" (NVSwitch systems), "npu" or "".
  std::string nvlink_remote_type(Device d, unsigned link) const;
  // PCIe common ancestor level between two GPUs, as nvidia-smi topo names it
  // ("PIX", "PXB", "PHB", "NODE", "SYS"); "" when unknown.
  std::string pcie_path(Device a, Device b) const;

  // Loaded function pointer by name (nullptr if this NVML lacks it); for phases
  // that need calls beyond the inventory (smoke's health checks).
  void* symbol(const char* name) const;
  std::string error_string(nvml_api::nvmlReturn_t rc) const;

 private:
  Nvml();
  void* lib_ = nullptr;
  bool available_ = false;
  std::string reason_;
};

}  // namespace gpuaccept
