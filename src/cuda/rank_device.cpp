#include "cuda/rank_device.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "hw/node_gpu_index.h"

namespace gpuaccept {

RankDevice choose_rank_device(const World& world) {
  RankDevice d;
  if (const cudaError_t e = cudaGetDeviceCount(&d.visible); e != cudaSuccess) {
    d.visible = 0;
    d.reason = fmt::format("no CUDA device: {}", cudaGetErrorString(e));
    return d;
  }
  if (d.visible == 0) {
    d.reason = "no CUDA device: none visible to this process";
    return d;
  }
  if (d.visible > 1 && world.local_size() > d.visible) {
    d.reason = fmt::format("config: {} ranks on {} but {} GPUs visible to each: run one rank per GPU",
                           world.local_size(), world.hostname(), d.visible);
    return d;
  }
  d.index = d.visible == 1 ? 0 : world.local_rank();
  GPUACCEPT_CUDA_CHECK(cudaSetDevice(d.index));
  cudaDeviceProp prop{};
  GPUACCEPT_CUDA_CHECK(cudaGetDeviceProperties(&prop, d.index));
  d.name = prop.name;
  d.uuid = "GPU-";
  const auto* b = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
  for (int i = 0; i < 16; ++i) d.uuid += fmt::format("{}{:02x}", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", b[i]);
  d.pci_bus_id = fmt::format("{:08x}:{:02x}:{:02x}.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
  d.node_index = record_gpu_index(d.pci_bus_id, -1, d.index);
  return d;
}

}  // namespace gpuaccept
