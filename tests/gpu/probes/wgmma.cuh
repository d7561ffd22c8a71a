// Hopper's warpgroup matrix multiply (wgmma, sm_90a) for the probes of tests/gpu/probes/: the
// shared-memory matrix descriptor and the fences around the asynchronous products, and the
// probes' CUDA call check. A Hopper attention in the phase would move the device part to
// src/train/kernels/ beside tensor_core.cuh.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

// A failed CUDA runtime call: its text, the error and the place, and the probe ends.
#define CK(x)                                                                                      \
  do {                                                                                             \
    const cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                       \
      std::printf("%s failed: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__);      \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

namespace gpuaccept::probes::wgmma {

__device__ inline std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// The matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address, leading and
// stride byte offsets (each >> 4 in 14 bits), base offset 0, the swizzle mode in bits 62-63
// (0 none, 1 128-byte, 2 64-byte, 3 32-byte).
__device__ inline std::uint64_t descriptor(std::uint32_t addr, std::uint32_t lbo, std::uint32_t sbo, int swizzle) {
  return (static_cast<std::uint64_t>(addr >> 4) & 0x3fff) | (static_cast<std::uint64_t>((lbo >> 4) & 0x3fff) << 16) |
         (static_cast<std::uint64_t>((sbo >> 4) & 0x3fff) << 32) | (static_cast<std::uint64_t>(swizzle) << 62);
}

// Before the first wgmma that reads registers this thread wrote (accumulators, A fragments).
__device__ inline void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ inline void wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Shared-memory writes of this thread (stores, cp.async) made visible to the async proxy that
// wgmma reads through; a barrier after it makes every thread's visible.
__device__ inline void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

}  // namespace gpuaccept::probes::wgmma
