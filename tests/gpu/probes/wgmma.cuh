// The probes' view of Hopper's wgmma (sm_90a): the project's primitives (src/train/kernels/
// wgmma.cuh: descriptors, fences, the swizzled tile, the products) under the probes' namespace,
// and the probes' CUDA call check.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "train/kernels/wgmma.cuh"

// A failed CUDA runtime call: its text, the error and the place, and the probe ends.
#define CK(x)                                                                                      \
  do {                                                                                             \
    const cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                       \
      std::printf("%s failed: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__);      \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

namespace gpuaccept::probes {
namespace wgmma = train::wgmma;
}  // namespace gpuaccept::probes
