#include "smoke/gpu_device.h"


#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "hw/node_gpu_index.h"

namespace gpuaccept::smoke {

namespace {
std::string bus_id_of(int device) {
  char buf[32] = {};
  GPUACCEPT_CUDA_CHECK(cudaDeviceGetPCIBusId(buf, sizeof buf, device));
  return buf;
}
}  // namespace

std::string format_cuda_uuid(const cudaUUID_t& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::string hex;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) hex += '-';
    hex += fmt::format("{:02x}", b[i]);
  }
  return "GPU-" + hex;
}

std::optional<Nvml::Device> nvml_device_for_bus_id(const std::string& cuda_bus_id) {
  const Nvml& nvml = Nvml::instance();
  if (!nvml.available()) return std::nullopt;
  if (auto d = nvml.device_by_pci_bus_id(cuda_bus_id)) return d;
  // NVML writes an 8-digit domain, CUDA a 4-digit one.
  for (int i = 0; i < nvml.device_count(); ++i)
    if (auto d = nvml.device_by_index(static_cast<unsigned>(i)); d && same_pci_address(nvml.pci_bus_id(*d), cuda_bus_id))
      return d;
  return std::nullopt;
}

int node_index_for_bus_id(const std::string& cuda_bus_id, const std::optional<Nvml::Device>& nvml, int cuda_index) {
  const std::optional<unsigned> nvml_index = nvml ? Nvml::instance().index(*nvml) : std::nullopt;
  return record_gpu_index(cuda_bus_id, nvml_index ? static_cast<int>(*nvml_index) : -1, cuda_index);
}

GpuDevice select_gpu(int local_rank) {
  GpuDevice g;
  int count = 0;
  if (const cudaError_t rc = cudaGetDeviceCount(&count); rc != cudaSuccess || count == 0) {
    g.reason = rc != cudaSuccess ? fmt::format("no CUDA device: {}", cudaGetErrorString(rc)) : "no CUDA device";
    (void)cudaGetLastError();  // not sticky, but leave nothing behind for the next check
    return g;
  }
  g.visible = count;
  try {
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp p{};
      GPUACCEPT_CUDA_CHECK(cudaGetDeviceProperties(&p, i));
      g.visible_uuids.push_back(format_cuda_uuid(p.uuid));
    }
    const int index = local_rank % count;
    GPUACCEPT_CUDA_CHECK(cudaSetDevice(index));
    cudaDeviceProp p{};
    GPUACCEPT_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
    g.name = p.name;
    g.uuid = format_cuda_uuid(p.uuid);
    g.cc = p.major * 10 + p.minor;
    g.sms = p.multiProcessorCount;
    g.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
    g.memory_bytes = p.totalGlobalMem;
    g.bus_id = bus_id_of(index);
    g.index = index;
  } catch (const std::exception& e) {
    g.reason = fmt::format("CUDA device unusable: {}", e.what());
    return g;
  }
  g.nvml = nvml_device_for_bus_id(g.bus_id);
  if (!g.nvml)
    g.nvml_reason = Nvml::instance().available() ? fmt::format("NVML does not know the GPU at {}", g.bus_id)
                                                 : Nvml::instance().reason();
  g.node_index = node_index_for_bus_id(g.bus_id, g.nvml, g.index);
  return g;
}

Record gpu_record(const GpuDevice& gpu, const std::string& test) {
  Record r;
  r.test = test;
  r.gpu_index = gpu.node_index;
  r.gpu_uuid = gpu.uuid;
  return r;
}

}  // namespace gpuaccept::smoke
