#include "hw/nvml.h"

#include <dlfcn.h>

#include <fstream>

#include <fmt/format.h>

namespace gpuaccept {
using namespace nvml_api;

namespace {
// Calls an NVML function by name; NVML_ERROR_FUNCTION_NOT_FOUND when this library lacks it.
template <typename... Args>
nvmlReturn_t call(const Nvml& n, const char* fn, Args... args) {
  using Fn = nvmlReturn_t (*)(Args...);
  auto f = reinterpret_cast<Fn>(n.symbol(fn));
  return f ? f(args...) : NVML_ERROR_FUNCTION_NOT_FOUND;
}
}  // namespace

Nvml& Nvml::instance() {
  static Nvml n;
  return n;
}

Nvml::Nvml() {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    const char* e = dlerror();
    reason_ = fmt::format("NVML not loadable: {}", e ? e : "dlopen failed");
    return;
  }
  const nvmlReturn_t rc = call(*this, "nvmlInit_v2");
  if (rc != NVML_SUCCESS) {
    // Where the library is installed but no driver is loaded (a build host, a container
    // without the GPU runtime): "Driver Not Loaded". The word NVML says whose call failed.
    reason_ = fmt::format("NVML's nvmlInit_v2 failed: {}", error_string(rc));
    return;
  }
  available_ = true;
}

void* Nvml::symbol(const char* name) const { return lib_ ? dlsym(lib_, name) : nullptr; }

std::string Nvml::error_string(nvmlReturn_t rc) const {
  using Fn = const char* (*)(nvmlReturn_t);
  if (auto f = reinterpret_cast<Fn>(symbol("nvmlErrorString"))) return f(rc);
  return fmt::format("NVML error {}", rc);
}

std::string Nvml::driver_version() const {
  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  return call(*this, "nvmlSystemGetDriverVersion", buf, static_cast<unsigned>(sizeof buf)) == NVML_SUCCESS ? buf : "";
}

std::optional<int> Nvml::cuda_driver_version() const {
  int v = 0;
  if (call(*this, "nvmlSystemGetCudaDriverVersion_v2", &v) == NVML_SUCCESS) return v;
  return std::nullopt;
}

std::string Nvml::nvml_version() const {
  char buf[80] = {};
  return call(*this, "nvmlSystemGetNVMLVersion", buf, static_cast<unsigned>(sizeof buf)) == NVML_SUCCESS ? buf : "";
}

int Nvml::device_count() const {
  unsigned n = 0;
  return available_ && call(*this, "nvmlDeviceGetCount_v2", &n) == NVML_SUCCESS ? static_cast<int>(n) : 0;
}

std::optional<Nvml::Device> Nvml::device_by_index(unsigned index) const {
  Device d = nullptr;
  if (call(*this, "nvmlDeviceGetHandleByIndex_v2", index, &d) == NVML_SUCCESS) return d;
  return std::nullopt;
}

std::optional<Nvml::Device> Nvml::device_by_pci_bus_id(const std::string& bus_id) const {
  Device d = nullptr;
  if (call(*this, "nvmlDeviceGetHandleByPciBusId_v2", bus_id.c_str(), &d) == NVML_SUCCESS) return d;
  return std::nullopt;
}

std::string Nvml::name(Device d) const {
  char buf[NVML_DEVICE_NAME_BUFFER_SIZE] = {};
  return call(*this, "nvmlDeviceGetName", d, buf, static_cast<unsigned>(sizeof buf)) == NVML_SUCCESS ? buf : "";
}

std::string Nvml::uuid(Device d) const {
  char buf[NVML_DEVICE_UUID_BUFFER_SIZE] = {};
  return call(*this, "nvmlDeviceGetUUID", d, buf, static_cast<unsigned>(sizeof buf)) == NVML_SUCCESS ? buf : "";
}

std::string Nvml::pci_bus_id(Device d) const {
  nvmlPciInfo_t pci{};
  return call(*this, "nvmlDeviceGetPciInfo_v3", d, &pci) == NVML_SUCCESS ? pci.busId : "";
}

std::optional<unsigned> Nvml::index(Device d) const {
  unsigned i = 0;
  if (call(*this, "nvmlDeviceGetIndex", d, &i) == NVML_SUCCESS) return i;
  return std::nullopt;
}

std::optional<unsigned long long> Nvml::memory_total(Device d) const {
  nvmlMemory_t m{};
  if (call(*this, "nvmlDeviceGetMemoryInfo", d, &m) == NVML_SUCCESS) return m.total;
  return std::nullopt;
}

std::optional<std::pair<int, int>> Nvml::compute_capability(Device d) const {
  int major = 0, minor = 0;
  if (call(*this, "nvmlDeviceGetCudaComputeCapability", d, &major, &minor) == NVML_SUCCESS)
    return std::make_pair(major, minor);
  return std::nullopt;
}

std::optional<bool> Nvml::mig_enabled(Device d) const {
  unsigned current = 0, pending = 0;
  if (call(*this, "nvmlDeviceGetMigMode", d, &current, &pending) == NVML_SUCCESS) return current == 1;
  return std::nullopt;
}

std::optional<bool> Nvml::ecc_enabled(Device d) const {
  nvmlEnableState_t current = 0, pending = 0;
  if (call(*this, "nvmlDeviceGetEccMode", d, &current, &pending) == NVML_SUCCESS) return current == 1;
  return std::nullopt;
}

std::optional<unsigned> Nvml::power_limit_mw(Device d) const {
  unsigned mw = 0;
  if (call(*this, "nvmlDeviceGetEnforcedPowerLimit", d, &mw) == NVML_SUCCESS) return mw;
  return std::nullopt;
}

std::optional<unsigned> Nvml::default_power_limit_mw(Device d) const {
  unsigned mw = 0;
  if (call(*this, "nvmlDeviceGetPowerManagementDefaultLimit", d, &mw) == NVML_SUCCESS) return mw;
  return std::nullopt;
}

std::optional<unsigned> Nvml::module_id(Device d) const {
  unsigned id = 0;
  if (call(*this, "nvmlDeviceGetModuleId", d, &id) == NVML_SUCCESS) return id;
  return std::nullopt;
}

std::optional<unsigned> Nvml::numa_node(Device d) const {
  unsigned node = 0;
  if (call(*this, "nvmlDeviceGetNumaNodeId", d, &node) == NVML_SUCCESS) return node;
  // Older drivers: the kernel knows the PCI device's NUMA node. NVML's bus id has an
  // 8-digit domain; sysfs uses 4, lower case.
  std::string bus = pci_bus_id(d);
  if (bus.size() > 12) bus = bus.substr(bus.size() - 12);
  for (auto& c : bus) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::ifstream in("/sys/bus/pci/devices/" + bus + "/numa_node");
  int n = -1;
  if (in >> n && n >= 0) return static_cast<unsigned>(n);
  return std::nullopt;
}

std::vector<std::optional<bool>> Nvml::nvlink_states(Device d) const {
  std::vector<std::optional<bool>> out;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = 0;
    if (call(*this, "nvmlDeviceGetNvLinkState", d, link, &active) == NVML_SUCCESS)
      out.emplace_back(active == 1);
    else
      out.emplace_back(std::nullopt);
  }
  while (!out.empty() && !out.back().has_value()) out.pop_back();
  return out;
}

std::string Nvml::nvlink_remote_bus_id(Device d, unsigned link) const {
  nvmlPciInfo_t pci{};
  return call(*this, "nvmlDeviceGetNvLinkRemotePciInfo_v2", d, link, &pci) == NVML_SUCCESS ? pci.busId : "";
}

std::string Nvml::nvlink_remote_type(Device d, unsigned link) const {
  int type = -1;  // nvmlIntNvLinkDeviceType_t: 0 GPU, 1 IBM NPU, 2 NVSwitch, 0xFF unknown
  if (call(*this, "nvmlDeviceGetNvLinkRemoteDeviceType", d, link, &type) != NVML_SUCCESS) return "";
  switch (type) {
    case 0: return "gpu";
    case 1: return "npu";
    case 2: return "switch";
  }
  return "";
}

std::string Nvml::pcie_path(Device a, Device b) const {
  nvmlGpuTopologyLevel_t level{};
  if (call(*this, "nvmlDeviceGetTopologyCommonAncestor", a, b, &level) != NVML_SUCCESS) return "";
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL: return "X";
    case NVML_TOPOLOGY_SINGLE: return "PIX";
    case NVML_TOPOLOGY_MULTIPLE: return "PXB";
    case NVML_TOPOLOGY_HOSTBRIDGE: return "PHB";
    case NVML_TOPOLOGY_NODE: return "NODE";
    case NVML_TOPOLOGY_SYSTEM: return "SYS";
  }
  return "";
}

}  // namespace gpuaccept
