// RMSNorm backward into an fp32 gradient (kernels.h gives the math): one warp per row, lanes
// over the columns (consecutive lanes, consecutive columns: coalesced), two passes over the
// row (the mean, then the gradient). The bf16 version (rmsnorm.cu) serves bf16 gradients; the
// model keeps the residual stream's gradient in fp32 because every layer adds two terms to it.
#include "fsdp-lora/gpu/kernels/common.cuh"

namespace gpuaccept::fsdp::gpu {

namespace {

namespace dd = detail::dd;

constexpr int kBlock = 256;  // 8 rows per block

using detail::check_launch;
using detail::require;

__global__ void rmsnorm_backward_fp32_kernel(float* __restrict__ dx, const float* __restrict__ dout,
                                             const bf16* __restrict__ x, const bf16* __restrict__ w,
                                             const float* __restrict__ rstd, int N, int C, bool accumulate) {
  const int lane = threadIdx.x % dd::kWarp;
  const int row = blockIdx.x * (blockDim.x / dd::kWarp) + threadIdx.x / dd::kWarp;
  if (row >= N) return;  // the whole warp leaves together
  const std::size_t base = static_cast<std::size_t>(row) * C;
  const float s = rstd[row];

  float sum_gx = 0.f;  // sum_c g * xhat
  for (int c = lane; c < C; c += dd::kWarp)
    sum_gx += dout[base + c] * __bfloat162float(w[c]) * (__bfloat162float(x[base + c]) * s);
  const float mean_gx = dd::warp_sum(sum_gx) / static_cast<float>(C);

  for (int c = lane; c < C; c += dd::kWarp) {
    const float xhat = __bfloat162float(x[base + c]) * s;
    const float d = s * (dout[base + c] * __bfloat162float(w[c]) - xhat * mean_gx);
    dx[base + c] = accumulate ? dx[base + c] + d : d;
  }
}

}  // namespace

void rmsnorm_backward_fp32(float* dx, const float* dout, const bf16* x, const bf16* w, const float* rstd, int N, int C,
                           bool accumulate, cudaStream_t stream) {
  require(N >= 0 && C > 0, "rmsnorm_backward_fp32: N must be >= 0 and C > 0");
  if (N == 0) return;
  const int blocks = dd::ceil_div(N, kBlock / dd::kWarp);
  rmsnorm_backward_fp32_kernel<<<blocks, kBlock, 0, stream>>>(dx, dout, x, w, rstd, N, C, accumulate);
  check_launch("rmsnorm_backward_fp32");
}

}  // namespace gpuaccept::fsdp::gpu
