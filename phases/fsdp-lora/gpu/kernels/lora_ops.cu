// Small LoRA helpers (kernels.h): the alpha/r scale on a rank-r product, and the dropout
// backward into an fp32 gradient, with the very mask lora_dropout.cu draws (dropout_bits of
// kernels.h), for one adapter or for up to three that read the same input.
#include <cmath>

#include "fsdp-lora/gpu/kernels/common.cuh"

namespace gpuaccept::fsdp::gpu {

namespace {

namespace td = detail::td;

constexpr int kBlock = 256;

using detail::check_launch;
using detail::require;

__global__ void scale_kernel(bf16* x, std::size_t n, float s) {
  for (std::size_t i = td::global_thread(); i < n; i += td::global_threads())
    x[i] = __float2bfloat16(s * __bfloat162float(x[i]));
}

// dx += fp32(g[t] * m_t) for t = 0 .. count-1 in order, each product rounded to fp32 before
// its add (explicit _rn: no FMA), as lora_dropout_backward's accumulate does in bf16. One pass
// over dx for all the adapters that read the same input; W = 8 (two 16-byte fp32 accesses, one
// 16-byte bf16 access per adapter, 4 splitmix64 outputs per adapter for 8 elements) where the
// sizes and pointers allow, else W = 1.
struct SharedGradients {
  const bf16* g[kMaxSharedDropouts];
  std::uint64_t stream[kMaxSharedDropouts];
  int count;
};

template <int W>
__global__ void dropout_backward_fp32_kernel(float* __restrict__ dx, int dx_stride, SharedGradients grads,
                                             int g_stride, int N, int in, std::uint32_t threshold, float scale) {
  const int groups = in / W;
  const std::size_t items = static_cast<std::size_t>(N) * groups;
  for (std::size_t item = td::global_thread(); item < items; item += td::global_threads()) {
    const std::size_t n = item / groups;
    const int c0 = static_cast<int>(item % groups) * W;
    const std::uint64_t e0 = n * static_cast<std::uint64_t>(in) + c0;  // logical index, as the forward's
    float* o = dx + n * dx_stride + c0;
    float acc[W];
    td::load_f32<W>(acc, o);
    for (int t = 0; t < grads.count; ++t) {
      bool keep[W];
      if constexpr (W == 8) {
#pragma unroll
        for (int j = 0; j < W / 2; ++j) {
          const std::uint64_t bits = dropout_bits(grads.stream[t], e0 / 2 + j);
          keep[2 * j] = static_cast<std::uint32_t>(bits) >= threshold;
          keep[2 * j + 1] = static_cast<std::uint32_t>(bits >> 32) >= threshold;
        }
      } else {
        keep[0] = dropout_keep(grads.stream[t], e0, threshold);
      }
      float g[W];
      td::load_bf16<W>(g, grads.g[t] + n * g_stride + c0);
#pragma unroll
      for (int k = 0; k < W; ++k) acc[k] = __fadd_rn(acc[k], __fmul_rn(g[k], keep[k] ? scale : 0.f));
    }
    td::store_f32<W>(o, acc);
  }
}

}  // namespace

void scale_bf16(bf16* x, std::size_t n, float s, cudaStream_t stream) {
  if (n == 0) return;
  scale_kernel<<<td::grid_for(n, kBlock), kBlock, 0, stream>>>(x, n, s);
  check_launch("scale_bf16");
}

void lora_dropout_backward_fp32_shared(float* dx, int dx_stride, const bf16* const* g, const DropoutKey* keys,
                                       int count, int g_stride, int N, int in, double p, cudaStream_t stream) {
  require(N >= 0 && in > 0, "lora_dropout_backward_fp32: N must be >= 0 and in > 0");
  require(dx_stride >= in && g_stride >= in, "lora_dropout_backward_fp32: strides must be >= in");
  require(std::isfinite(p) && p >= 0 && p < 1, "lora_dropout_backward_fp32: p must be in [0, 1)");
  require(count >= 1 && count <= kMaxSharedDropouts, "lora_dropout_backward_fp32: 1 to 3 gradients");
  if (N == 0) return;
  SharedGradients grads{};
  grads.count = count;
  bool aligned = td::aligned16(dx) && in % 8 == 0 && dx_stride % 8 == 0 && g_stride % 8 == 0;
  for (int t = 0; t < count; ++t) {
    grads.g[t] = g[t];
    grads.stream[t] = dropout_stream(keys[t]);
    aligned = aligned && td::aligned16(g[t]);
  }
  const std::uint32_t threshold = dropout_threshold(p);
  const float scale = dropout_scale(p);
  if (aligned) {
    const std::size_t items = static_cast<std::size_t>(N) * (in / 8);
    dropout_backward_fp32_kernel<8><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(dx, dx_stride, grads, g_stride,
                                                                                       N, in, threshold, scale);
  } else {
    const std::size_t items = static_cast<std::size_t>(N) * in;
    dropout_backward_fp32_kernel<1><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(dx, dx_stride, grads, g_stride,
                                                                                       N, in, threshold, scale);
  }
  check_launch("lora_dropout_backward_fp32");
}

void lora_dropout_backward_fp32(float* dx, int dx_stride, const bf16* g, int g_stride, int N, int in, double p,
                                const DropoutKey& key, cudaStream_t stream) {
  lora_dropout_backward_fp32_shared(dx, dx_stride, &g, &key, 1, g_stride, N, in, p, stream);
}

}  // namespace gpuaccept::fsdp::gpu
