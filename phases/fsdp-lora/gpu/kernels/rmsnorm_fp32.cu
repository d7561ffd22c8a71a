// RMSNorm backward into an fp32 gradient (kernels.h gives the math): one warp per row, lanes
// over the columns, two passes over the row (the mean, then the gradient; the second finds
// the row in L1/L2). W = 8 columns a lane at a time (16-byte bf16 and 2 x 16-byte fp32
// accesses) where C and the pointers allow, else W = 1. The bf16 version (rmsnorm.cu) serves
// bf16 gradients; the model keeps the residual stream's gradient in fp32 because every layer
// adds two terms to it, and takes its bf16 copy (the matmuls' operand) from the same pass.
#include "fsdp-lora/gpu/kernels/common.cuh"

namespace gpuaccept::fsdp::gpu {

namespace {

namespace td = detail::td;

constexpr int kBlock = 256;  // 8 rows per block

using detail::check_launch;
using detail::require;

template <int W>
__global__ void rmsnorm_backward_fp32_kernel(float* __restrict__ dx, bf16* __restrict__ dx_bf16,
                                             const float* __restrict__ dout, const bf16* __restrict__ x,
                                             const bf16* __restrict__ w, const float* __restrict__ rstd, int N, int C,
                                             bool accumulate) {
  const int lane = threadIdx.x % td::kWarp;
  const int row = blockIdx.x * (blockDim.x / td::kWarp) + threadIdx.x / td::kWarp;
  if (row >= N) return;  // the whole warp leaves together
  const std::size_t base = static_cast<std::size_t>(row) * C;
  const float s = rstd[row];

  float sum_gx = 0.f;  // sum_c g * xhat
  for (int c = lane * W; c < C; c += td::kWarp * W) {
    float g[W], xv[W], wv[W];
    td::load_f32<W>(g, dout + base + c);
    td::load_bf16<W>(xv, x + base + c);
    td::load_bf16<W>(wv, w + c);
#pragma unroll
    for (int k = 0; k < W; ++k) sum_gx += g[k] * wv[k] * (xv[k] * s);
  }
  const float mean_gx = td::warp_sum(sum_gx) / static_cast<float>(C);

  for (int c = lane * W; c < C; c += td::kWarp * W) {
    float g[W], xv[W], wv[W], d[W];
    td::load_f32<W>(g, dout + base + c);
    td::load_bf16<W>(xv, x + base + c);
    td::load_bf16<W>(wv, w + c);
    if (accumulate) td::load_f32<W>(d, dx + base + c);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float xhat = xv[k] * s;
      const float dk = s * (g[k] * wv[k] - xhat * mean_gx);
      d[k] = accumulate ? d[k] + dk : dk;
    }
    td::store_f32<W>(dx + base + c, d);
    if (dx_bf16 != nullptr) td::store_bf16<W>(dx_bf16 + base + c, d);
  }
}

}  // namespace

void rmsnorm_backward_fp32(float* dx, const float* dout, const bf16* x, const bf16* w, const float* rstd, int N, int C,
                           bool accumulate, cudaStream_t stream, bf16* dx_bf16) {
  require(N >= 0 && C > 0, "rmsnorm_backward_fp32: N must be >= 0 and C > 0");
  if (N == 0) return;
  const int blocks = td::ceil_div(N, kBlock / td::kWarp);
  const bool vector = C % 8 == 0 && td::aligned16(dx) && td::aligned16(dout) && td::aligned16(x) &&
                      td::aligned16(w) && (dx_bf16 == nullptr || td::aligned16(dx_bf16));
  if (vector)
    rmsnorm_backward_fp32_kernel<8><<<blocks, kBlock, 0, stream>>>(dx, dx_bf16, dout, x, w, rstd, N, C, accumulate);
  else
    rmsnorm_backward_fp32_kernel<1><<<blocks, kBlock, 0, stream>>>(dx, dx_bf16, dout, x, w, rstd, N, C, accumulate);
  check_launch("rmsnorm_backward_fp32");
}

}  // namespace gpuaccept::fsdp::gpu
