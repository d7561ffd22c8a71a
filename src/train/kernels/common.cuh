// Device helpers of the training phases' kernels (src/train/kernels, ddp's gpu/kernels and
// fsdp-lora's, each through its own common.cuh): warp and block reductions in a fixed order (what
// makes the optimizer's norm the same bits on every replica), 16-byte bf16 loads, grid sizing
// and the launch check. Header-only and private to kernel sources; one copy, so every phase's
// reductions sum in the same order.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <stdexcept>
#include <string>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "common/error.h"
#include "train/optimizer_kernels.h"

namespace gpuaccept::train::detail {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;

template <typename T>
constexpr T ceil_div(T a, T b) {
  return (a + b - 1) / b;
}

// Launch errors (bad configuration, too much shared memory) only show at the next
// runtime call, so every launcher checks right after its launch. A failure goes out through
// the one error path (common/error.h): a CallError naming the kernel with `family` ("ddp",
// "fsdp", "train", so it points at the right library), CUDA's text, the launcher's file:line,
// and the rank and host.
inline void check_launch_of(const char* family, const char* kernel, const std::source_location& loc) {
  const cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess)
    ::gpuaccept::raise_call_error("CUDA", std::string(family) + " kernel " + kernel + " launch", cudaGetErrorString(rc),
                                  loc);
}

inline void require_of(const char* family, bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string(family) + " kernels: " + what);
}

// src/train's own kernels (train/kernels/optimizer.cu).
inline void check_launch(const char* kernel, const std::source_location& loc = std::source_location::current()) {
  check_launch_of("train", kernel, loc);
}
inline void require(bool ok, const char* what) { require_of("train", ok, what); }

// Blocks for a grid-stride loop over `items`: enough to fill an H100 several times,
// capped so the grid size never overflows.
inline unsigned grid_for(std::size_t items, int block) {
  const std::size_t blocks = ceil_div<std::size_t>(items, static_cast<std::size_t>(block));
  constexpr std::size_t kMaxBlocks = 1u << 16;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

__device__ inline std::size_t global_thread() {
  return blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
}
__device__ inline std::size_t global_threads() { return gridDim.x * static_cast<std::size_t>(blockDim.x); }

// Butterfly reductions: every lane ends with the result, in the same order every time.
__device__ inline float warp_sum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// Whole-block reductions (blockDim.x a multiple of 32, at most 1024); every thread gets
// the result. The order is fixed by blockDim alone, so the result is deterministic.
template <bool kMax>
__device__ inline float block_reduce(float v) {
  __shared__ float per_warp[kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();  // per_warp may still be read by an earlier call
  if (lane == 0) per_warp[warp] = v;
  __syncthreads();
  v = lane < warps ? per_warp[lane] : (kMax ? -INFINITY : 0.f);
  return kMax ? warp_max(v) : warp_sum(v);
}
__device__ inline float block_sum(float v) { return block_reduce<false>(v); }
__device__ inline float block_max(float v) { return block_reduce<true>(v); }

// W consecutive bf16 <-> fp32. W == 8 is one 16-byte access (the caller has checked the
// alignment); W == 1 is the fallback for any size and offset.
template <int W>
__device__ inline void load_bf16(float (&x)[W], const bf16* p) {
  static_assert(W == 1 || W == 8);
  if constexpr (W == 8) {
    const int4 raw = *reinterpret_cast<const int4*>(p);
    const auto* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 f = __bfloat1622float2(pairs[k]);
      x[2 * k] = f.x;
      x[2 * k + 1] = f.y;
    }
  } else {
    x[0] = __bfloat162float(p[0]);
  }
}
template <int W>
__device__ inline void store_bf16(bf16* p, const float (&x)[W]) {
  static_assert(W == 1 || W == 8);
  if constexpr (W == 8) {
    int4 raw;
    auto* pairs = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
    for (int k = 0; k < 4; ++k) pairs[k] = __floats2bfloat162_rn(x[2 * k], x[2 * k + 1]);
    *reinterpret_cast<int4*>(p) = raw;
  } else {
    p[0] = __float2bfloat16(x[0]);
  }
}
// Copy W bf16 unchanged.
template <int W>
__device__ inline void copy_bf16(bf16* dst, const bf16* src) {
  static_assert(W == 1 || W == 8);
  if constexpr (W == 8)
    *reinterpret_cast<int4*>(dst) = *reinterpret_cast<const int4*>(src);
  else
    dst[0] = src[0];
}
// W consecutive fp32: W == 8 is two 16-byte accesses (the caller has checked the alignment).
template <int W>
__device__ inline void load_f32(float (&x)[W], const float* p) {
  static_assert(W == 1 || W == 8);
  if constexpr (W == 8) {
    const float4 lo = reinterpret_cast<const float4*>(p)[0], hi = reinterpret_cast<const float4*>(p)[1];
    x[0] = lo.x, x[1] = lo.y, x[2] = lo.z, x[3] = lo.w, x[4] = hi.x, x[5] = hi.y, x[6] = hi.z, x[7] = hi.w;
  } else {
    x[0] = p[0];
  }
}
template <int W>
__device__ inline void store_f32(float* p, const float (&x)[W]) {
  static_assert(W == 1 || W == 8);
  if constexpr (W == 8) {
    reinterpret_cast<float4*>(p)[0] = make_float4(x[0], x[1], x[2], x[3]);
    reinterpret_cast<float4*>(p)[1] = make_float4(x[4], x[5], x[6], x[7]);
  } else {
    p[0] = x[0];
  }
}

}  // namespace gpuaccept::train::detail
