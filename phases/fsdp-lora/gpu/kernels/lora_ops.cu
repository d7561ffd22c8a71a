// Small LoRA helpers (kernels.h): the alpha/r scale on a rank-r product, and the dropout
// backward into an fp32 gradient, with the very mask lora_dropout.cu draws (dropout_keep of
// kernels.h, one value per thread: these tensors are (N, in) once per adapter).
#include <cmath>

#include "fsdp-lora/gpu/kernels/common.cuh"

namespace gpuaccept::fsdp::gpu {

namespace {

namespace dd = detail::dd;

constexpr int kBlock = 256;

using detail::check_launch;
using detail::require;

__global__ void scale_kernel(bf16* x, std::size_t n, float s) {
  for (std::size_t i = dd::global_thread(); i < n; i += dd::global_threads())
    x[i] = __float2bfloat16(s * __bfloat162float(x[i]));
}

// dx += fp32(g * m): the product rounded to fp32 before the add (explicit _rn: no FMA), as
// lora_dropout_backward's accumulate does in bf16.
__global__ void dropout_backward_fp32_kernel(float* __restrict__ dx, int dx_stride, const bf16* __restrict__ g,
                                             int g_stride, int N, int in, std::uint64_t stream,
                                             std::uint32_t threshold, float scale) {
  const std::size_t items = static_cast<std::size_t>(N) * in;
  for (std::size_t e = dd::global_thread(); e < items; e += dd::global_threads()) {
    const std::size_t n = e / in, c = e % in;
    const float m = dropout_keep(stream, e, threshold) ? scale : 0.f;
    float* o = dx + n * dx_stride + c;
    *o = __fadd_rn(*o, __fmul_rn(__bfloat162float(g[n * g_stride + c]), m));
  }
}

}  // namespace

void scale_bf16(bf16* x, std::size_t n, float s, cudaStream_t stream) {
  if (n == 0) return;
  scale_kernel<<<dd::grid_for(n, kBlock), kBlock, 0, stream>>>(x, n, s);
  check_launch("scale_bf16");
}

void lora_dropout_backward_fp32(float* dx, int dx_stride, const bf16* g, int g_stride, int N, int in, double p,
                                const DropoutKey& key, cudaStream_t stream) {
  require(N >= 0 && in > 0, "lora_dropout_backward_fp32: N must be >= 0 and in > 0");
  require(dx_stride >= in && g_stride >= in, "lora_dropout_backward_fp32: strides must be >= in");
  require(std::isfinite(p) && p >= 0 && p < 1, "lora_dropout_backward_fp32: p must be in [0, 1)");
  if (N == 0) return;
  const std::size_t items = static_cast<std::size_t>(N) * in;
  dropout_backward_fp32_kernel<<<dd::grid_for(items, kBlock), kBlock, 0, stream>>>(
      dx, dx_stride, g, g_stride, N, in, dropout_stream(key), dropout_threshold(p), dropout_scale(p));
  check_launch("lora_dropout_backward_fp32");
}

}  // namespace gpuaccept::fsdp::gpu
