// LoRA input dropout with a mask recomputed from a counter-based hash (kernels.h gives the
// RNG and the exact arithmetic). A grid-stride loop over N x in/W groups; W = 8 (16-byte
// accesses, 4 splitmix64 outputs for 8 elements) when in and the strides are multiples of 8
// and the pointers aligned, else W = 1 (one output per element, half of it used). Forward and
// backward are one kernel: backward is the same mask and scale applied to the gradient,
// optionally added to what dx holds.
#include <cmath>
#include <stdexcept>
#include <string>

#include "fsdp-lora/gpu/kernels/common.cuh"

namespace gpuaccept::fsdp::gpu {

namespace {

namespace td = detail::td;

constexpr int kBlock = 256;

using detail::check_launch;
using detail::require;

// out = bf16(x * m) or, accumulating, bf16(out + fp32(x * m)), m = keep ? scale : 0. The
// explicit _rn intrinsics keep the compiler from fusing the multiply and the add, so a CPU
// replay in fp32 gets the same bits. out may be x (each value is read by the thread that
// then writes it), hence no __restrict__.
template <int W>
__global__ void dropout_kernel(bf16* out, int out_stride, const bf16* x, int x_stride, int N, int in,
                               std::uint64_t stream, std::uint32_t threshold, float scale, bool accumulate,
                               std::uint8_t* __restrict__ mask) {
  const int groups = in / W;
  const std::size_t items = static_cast<std::size_t>(N) * groups;
  for (std::size_t item = td::global_thread(); item < items; item += td::global_threads()) {
    const std::size_t n = item / groups;
    const int c0 = static_cast<int>(item % groups) * W;
    const std::uint64_t e0 = n * static_cast<std::uint64_t>(in) + c0;  // logical index, even when W == 8

    bool keep[W];
    if constexpr (W == 8) {
#pragma unroll
      for (int j = 0; j < W / 2; ++j) {
        const std::uint64_t bits = dropout_bits(stream, e0 / 2 + j);
        keep[2 * j] = static_cast<std::uint32_t>(bits) >= threshold;
        keep[2 * j + 1] = static_cast<std::uint32_t>(bits >> 32) >= threshold;
      }
    } else {
      keep[0] = dropout_keep(stream, e0, threshold);
    }

    float v[W];
    td::load_bf16<W>(v, x + n * x_stride + c0);
#pragma unroll
    for (int k = 0; k < W; ++k) v[k] = __fmul_rn(v[k], keep[k] ? scale : 0.f);
    bf16* o = out + n * out_stride + c0;
    if (accumulate) {
      float old[W];
      td::load_bf16<W>(old, o);
#pragma unroll
      for (int k = 0; k < W; ++k) v[k] = __fadd_rn(old[k], v[k]);
    }
    td::store_bf16<W>(o, v);
    if (mask != nullptr) {
#pragma unroll
      for (int k = 0; k < W; ++k) mask[e0 + k] = keep[k] ? 1 : 0;
    }
  }
}

// out[t] = bf16(x * m_t) for the adapters t < count that read x: x read once for all of them.
struct SharedOutputs {
  bf16* out[kMaxSharedDropouts];
  std::uint64_t stream[kMaxSharedDropouts];
  int count;
};

template <int W>
__global__ void dropout_shared_kernel(SharedOutputs outs, int out_stride, const bf16* __restrict__ x, int x_stride,
                                      int N, int in, std::uint32_t threshold, float scale) {
  const int groups = in / W;
  const std::size_t items = static_cast<std::size_t>(N) * groups;
  for (std::size_t item = td::global_thread(); item < items; item += td::global_threads()) {
    const std::size_t n = item / groups;
    const int c0 = static_cast<int>(item % groups) * W;
    const std::uint64_t e0 = n * static_cast<std::uint64_t>(in) + c0;
    float v[W];
    td::load_bf16<W>(v, x + n * x_stride + c0);
    for (int t = 0; t < outs.count; ++t) {
      float o[W];
      if constexpr (W == 8) {
#pragma unroll
        for (int j = 0; j < W / 2; ++j) {
          const std::uint64_t bits = dropout_bits(outs.stream[t], e0 / 2 + j);
          o[2 * j] = __fmul_rn(v[2 * j], static_cast<std::uint32_t>(bits) >= threshold ? scale : 0.f);
          o[2 * j + 1] = __fmul_rn(v[2 * j + 1], static_cast<std::uint32_t>(bits >> 32) >= threshold ? scale : 0.f);
        }
      } else {
        o[0] = __fmul_rn(v[0], dropout_keep(outs.stream[t], e0, threshold) ? scale : 0.f);
      }
      td::store_bf16<W>(outs.out[t] + n * out_stride + c0, o);
    }
  }
}

void launch_dropout(const char* name, bf16* out, int out_stride, const bf16* x, int x_stride, int N, int in,
                    double p, const DropoutKey& key, bool accumulate, std::uint8_t* mask, cudaStream_t stream) {
  require(N >= 0 && in > 0, "lora_dropout: N must be >= 0 and in > 0");
  require(out_stride >= in && x_stride >= in, "lora_dropout: strides must be >= in");
  require(std::isfinite(p) && p >= 0 && p < 1, "lora_dropout: p must be in [0, 1)");
  if (N == 0) return;
  const std::uint64_t stream_id = dropout_stream(key);
  const std::uint32_t threshold = dropout_threshold(p);
  const float scale = dropout_scale(p);
  if (in % 8 == 0 && out_stride % 8 == 0 && x_stride % 8 == 0 && td::aligned16(out) && td::aligned16(x)) {
    const std::size_t items = static_cast<std::size_t>(N) * (in / 8);
    dropout_kernel<8><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(out, out_stride, x, x_stride, N, in,
                                                                          stream_id, threshold, scale, accumulate, mask);
  } else {
    const std::size_t items = static_cast<std::size_t>(N) * in;
    dropout_kernel<1><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(out, out_stride, x, x_stride, N, in,
                                                                          stream_id, threshold, scale, accumulate, mask);
  }
  check_launch(name);
}

}  // namespace

void lora_dropout_forward(bf16* out, int out_stride, const bf16* x, int x_stride, int N, int in, double p,
                          const DropoutKey& key, std::uint8_t* mask, cudaStream_t stream) {
  launch_dropout("lora_dropout_forward", out, out_stride, x, x_stride, N, in, p, key, false, mask, stream);
}

void lora_dropout_forward_shared(bf16* const* out, const DropoutKey* keys, int count, int out_stride, const bf16* x,
                                 int x_stride, int N, int in, double p, cudaStream_t stream) {
  require(N >= 0 && in > 0, "lora_dropout_forward_shared: N must be >= 0 and in > 0");
  require(out_stride >= in && x_stride >= in, "lora_dropout_forward_shared: strides must be >= in");
  require(std::isfinite(p) && p >= 0 && p < 1, "lora_dropout_forward_shared: p must be in [0, 1)");
  require(count >= 1 && count <= kMaxSharedDropouts, "lora_dropout_forward_shared: 1 to 3 outputs");
  if (N == 0) return;
  SharedOutputs outs{};
  outs.count = count;
  bool aligned = td::aligned16(x) && in % 8 == 0 && out_stride % 8 == 0 && x_stride % 8 == 0;
  for (int t = 0; t < count; ++t) {
    outs.out[t] = out[t];
    outs.stream[t] = dropout_stream(keys[t]);
    aligned = aligned && td::aligned16(out[t]);
  }
  const std::uint32_t threshold = dropout_threshold(p);
  const float scale = dropout_scale(p);
  if (aligned) {
    const std::size_t items = static_cast<std::size_t>(N) * (in / 8);
    dropout_shared_kernel<8><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(outs, out_stride, x, x_stride, N, in,
                                                                               threshold, scale);
  } else {
    const std::size_t items = static_cast<std::size_t>(N) * in;
    dropout_shared_kernel<1><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(outs, out_stride, x, x_stride, N, in,
                                                                               threshold, scale);
  }
  check_launch("lora_dropout_forward_shared");
}

void lora_dropout_backward(bf16* dx, int dx_stride, const bf16* g, int g_stride, int N, int in, double p,
                           const DropoutKey& key, bool accumulate, cudaStream_t stream) {
  launch_dropout("lora_dropout_backward", dx, dx_stride, g, g_stride, N, in, p, key, accumulate, nullptr, stream);
}

}  // namespace gpuaccept::fsdp::gpu
