// The flash attention backward's first pass (flash_attention_backward.cu), for heads of 64
// (ddp) and 128 (fsdp-lora): delta[b,h,t] = sum_d dy[b,t,h,d] * y[b,t,h,d] (rowsum(dO o O)),
// dy and y in the token-major (B, T, NH, kHeadDim) layout the attention output has before its
// projection; delta (B, NH, T) fp32. kHeadDim/8 lanes per (b, t, h) row, 16 bytes each from both tensors:
// wide loads keep enough bytes in flight to stream at HBM speed. The caller checks the launch.
#pragma once

#include <cstddef>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "train/kernels/common.cuh"

namespace gpuaccept::train::detail {

template <int kHeadDim>
__global__ void attention_delta_kernel(float* delta, const bf16* dy, const bf16* y, int B, int T, int NH) {
  constexpr int kLanes = kHeadDim / 8;
  const long long thread = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long item = thread / kLanes;  // (b, t, h)
  const bool inside = item < static_cast<long long>(B) * T * NH;  // every lane joins the shuffles
  float acc = 0.f;
  if (inside) {
    const std::size_t at = static_cast<std::size_t>(item) * kHeadDim + (thread % kLanes) * 8;  // rows are consecutive
    float x[8], w[8];
    load_bf16<8>(x, dy + at);
    load_bf16<8>(w, y + at);
#pragma unroll
    for (int i = 0; i < 8; ++i) acc = fmaf(x[i], w[i], acc);
  }
  for (int offset = kLanes / 2; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (inside && thread % kLanes == 0) {
    const int h = static_cast<int>(item % NH);
    const long long bt = item / NH;
    const int tt = static_cast<int>(bt % T), b = static_cast<int>(bt / T);
    delta[(static_cast<std::size_t>(b) * NH + h) * T + tt] = acc;
  }
}

template <int kHeadDim>
inline void launch_attention_delta(float* delta, const bf16* dy, const bf16* y, int B, int T, int NH,
                                   cudaStream_t stream) {
  const long long threads = static_cast<long long>(B) * T * NH * (kHeadDim / 8);
  attention_delta_kernel<kHeadDim>
      <<<static_cast<unsigned>((threads + 255) / 256), 256, 0, stream>>>(delta, dy, y, B, T, NH);
}

}  // namespace gpuaccept::train::detail
