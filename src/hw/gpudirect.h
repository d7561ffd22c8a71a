// Whether a GPU's memory can be the target of RDMA (GPUDirect RDMA), so that NCCL's NET/IB
// transport moves data NIC <-> GPU without a copy through host memory (its log says
// "NET/IB/<n>/GDRDMA"). Two ways exist on Linux:
//  - the nvidia_peermem kernel module (NVIDIA's, for MLNX_OFED / inbox rdma-core), or
//  - dma-buf: the GPU exports its memory as a dma-buf (the driver's CU_DEVICE_ATTRIBUTE_
//    DMA_BUF_SUPPORTED, with the open kernel modules on Linux >= 5.12) that the NIC imports.
// Either makes it possible; NCCL uses dma-buf first where both are there.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gpuaccept {

struct GpuDirectSupport {
  bool peermem = false;  // nvidia_peermem loaded
  bool dmabuf = false;   // the GPU exports dma-bufs
  bool possible() const { return peermem || dmabuf; }
  std::string detail;    // what was found, in words
};

// `cuda_device`: the CUDA ordinal of this process's GPU (-1: none, dma-buf not asked).
// `sys_module`: /sys/module (tests: a fixture).
GpuDirectSupport read_gpudirect_support(int cuda_device, const std::string& sys_module = "/sys/module");

void to_json(nlohmann::json& j, const GpuDirectSupport& g);

}  // namespace gpuaccept
