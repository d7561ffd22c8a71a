// Helpers shared by the fsdp-lora kernels of gpu/kernels/ (private to them): ddp's warp
// reductions, 16-byte loads and grid sizing (ddp/gpu/kernels/common.cuh, header-only), and the
// one launch and argument check, whose messages name these kernels rather than ddp's.
#pragma once

#include <stdexcept>
#include <string>

#include "ddp/gpu/kernels/common.cuh"
#include "fsdp-lora/gpu/kernels.h"

namespace gpuaccept::fsdp::gpu::detail {

namespace dd = ddp::gpu::detail;

// Launch errors (bad configuration, too much shared memory) only show at the next runtime
// call, so every launcher calls this right after its launch.
inline void check_launch(const char* kernel) {
  const cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess)
    throw std::runtime_error(std::string("fsdp kernel ") + kernel + ": launch failed: " + cudaGetErrorString(rc));
}

inline void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("fsdp kernels: ") + what);
}

}  // namespace gpuaccept::fsdp::gpu::detail
