// SwiGLU forward and backward (kernels.h gives the math). A grid-stride loop over
// N x I/W groups; each thread takes W consecutive values of one row: W = 8 with 16-byte
// accesses when I and every stride are multiples of 8 and every pointer is aligned (Qwen2:
// I = 18944, fused stride 2I), W = 1 otherwise. A thread reads all its inputs before it writes,
// which is what makes the in-place uses of kernels.h safe (no __restrict__ for that reason).
#include <stdexcept>
#include <string>

#include "fsdp-lora/gpu/kernels/common.cuh"

namespace gpuaccept::fsdp::gpu {

namespace {

namespace td = detail::td;

constexpr int kBlock = 256;

using detail::check_launch;
using detail::require;

// s(x) = 1/(1 + e^-x) with the fast exponential: e^-x overflows to inf for x < -88 and
// s = 0 (silu = -0, silu' = 0); underflows to 0 for x > 88 and s = 1 (silu = x, silu' = 1).
__device__ inline float sigmoid(float x) { return 1.f / (1.f + __expf(-x)); }

template <int W>
__global__ void swiglu_forward_kernel(bf16* h, int h_stride, const bf16* gate, const bf16* up, int in_stride, int N,
                                      int I) {
  const int groups = I / W;
  const std::size_t items = static_cast<std::size_t>(N) * groups;
  for (std::size_t item = td::global_thread(); item < items; item += td::global_threads()) {
    const std::size_t n = item / groups;
    const int i0 = static_cast<int>(item % groups) * W;
    float g[W], u[W];
    td::load_bf16<W>(g, gate + n * in_stride + i0);
    td::load_bf16<W>(u, up + n * in_stride + i0);
#pragma unroll
    for (int k = 0; k < W; ++k) g[k] = g[k] * sigmoid(g[k]) * u[k];
    td::store_bf16<W>(h + n * h_stride + i0, g);
  }
}

template <int W>
__global__ void swiglu_backward_kernel(bf16* dgate, bf16* dup, int dgrad_stride, const bf16* dh, int dh_stride,
                                       const bf16* gate, const bf16* up, int in_stride, int N, int I) {
  const int groups = I / W;
  const std::size_t items = static_cast<std::size_t>(N) * groups;
  for (std::size_t item = td::global_thread(); item < items; item += td::global_threads()) {
    const std::size_t n = item / groups;
    const int i0 = static_cast<int>(item % groups) * W;
    float g[W], u[W], d[W];
    td::load_bf16<W>(g, gate + n * in_stride + i0);
    td::load_bf16<W>(u, up + n * in_stride + i0);
    td::load_bf16<W>(d, dh + n * dh_stride + i0);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float s = sigmoid(g[k]);
      const float silu = g[k] * s;
      const float dsilu = s * (1.f + g[k] * (1.f - s));
      g[k] = d[k] * u[k] * dsilu;  // dgate
      u[k] = d[k] * silu;          // dup
    }
    td::store_bf16<W>(dgate + n * dgrad_stride + i0, g);
    td::store_bf16<W>(dup + n * dgrad_stride + i0, u);
  }
}

bool use_vectors(int I, std::initializer_list<int> strides, std::initializer_list<const void*> pointers) {
  if (I % 8 != 0) return false;
  for (const int s : strides)
    if (s % 8 != 0) return false;
  for (const void* p : pointers)
    if (!td::aligned16(p)) return false;
  return true;
}

}  // namespace

void swiglu_forward(bf16* h, int h_stride, const bf16* gate, const bf16* up, int in_stride, int N, int I,
                    cudaStream_t stream) {
  require(N >= 0 && I > 0, "swiglu_forward: N must be >= 0 and I > 0");
  require(h_stride >= I && in_stride >= I, "swiglu_forward: strides must be >= I");
  if (N == 0) return;
  if (use_vectors(I, {h_stride, in_stride}, {h, gate, up})) {
    const std::size_t items = static_cast<std::size_t>(N) * (I / 8);
    swiglu_forward_kernel<8><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(h, h_stride, gate, up, in_stride, N, I);
  } else {
    const std::size_t items = static_cast<std::size_t>(N) * I;
    swiglu_forward_kernel<1><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(h, h_stride, gate, up, in_stride, N, I);
  }
  check_launch("swiglu_forward");
}

void swiglu_backward(bf16* dgate, bf16* dup, int dgrad_stride, const bf16* dh, int dh_stride, const bf16* gate,
                     const bf16* up, int in_stride, int N, int I, cudaStream_t stream) {
  require(N >= 0 && I > 0, "swiglu_backward: N must be >= 0 and I > 0");
  require(dgrad_stride >= I && dh_stride >= I && in_stride >= I, "swiglu_backward: strides must be >= I");
  if (N == 0) return;
  if (use_vectors(I, {dgrad_stride, dh_stride, in_stride}, {dgate, dup, dh, gate, up})) {
    const std::size_t items = static_cast<std::size_t>(N) * (I / 8);
    swiglu_backward_kernel<8><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(dgate, dup, dgrad_stride, dh,
                                                                                  dh_stride, gate, up, in_stride, N, I);
  } else {
    const std::size_t items = static_cast<std::size_t>(N) * I;
    swiglu_backward_kernel<1><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(dgate, dup, dgrad_stride, dh,
                                                                                  dh_stride, gate, up, in_stride, N, I);
  }
  check_launch("swiglu_backward");
}

}  // namespace gpuaccept::fsdp::gpu
