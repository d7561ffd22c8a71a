// RMSNorm over the channels of each row, one warp per row (as ddp's layernorm). Lane L owns
// the groups of W channels starting at W*L, W*(L+32), ... (W = 8, 16-byte accesses, when
// C % 8 == 0 and the pointers are aligned; else W = 1). A row (7 KiB at Qwen2-7B's C = 3584,
// 16 KiB at C = 8192) stays in L1/L2 between the passes, so reading it twice is cheap.
#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "fsdp-lora/gpu/kernels/common.cuh"

namespace gpuaccept::fsdp::gpu {

namespace {

namespace td = detail::td;
constexpr int kWarp = td::kWarp;

constexpr int kForwardBlock = 128;       // 4 rows per block: 1024 blocks for 4096 rows, an even spread
constexpr int kBackwardBlock = 128;      // without dw: one warp per row, as forward
constexpr int kWeightGradBlock = 512;    // with dw: 16 warps share one block's dw partials
constexpr int kWeightGradMaxBlocks = 528;  // 4 blocks on each of an H100's 132 SMs

using detail::check_launch;
using detail::require;

// Pass 1: sum of squares (fp32 per lane, then the warp's butterfly); pass 2: x * rstd * w.
template <int W>
__global__ void rmsnorm_forward_kernel(bf16* __restrict__ out, float* __restrict__ rstd, const bf16* __restrict__ x,
                                       const bf16* __restrict__ w, int N, int C, float eps) {
  const int lane = threadIdx.x % kWarp;
  const int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (row >= N) return;  // the whole warp leaves together
  const bf16* x_row = x + static_cast<std::size_t>(row) * C;

  float sq = 0.f;
  for (int c0 = lane * W; c0 < C; c0 += kWarp * W) {
    float v[W];
    td::load_bf16<W>(v, x_row + c0);
#pragma unroll
    for (int k = 0; k < W; ++k) sq += v[k] * v[k];
  }
  const float s = rsqrtf(td::warp_sum(sq) / C + eps);

  bf16* o_row = out + static_cast<std::size_t>(row) * C;
  for (int c0 = lane * W; c0 < C; c0 += kWarp * W) {
    float v[W], g[W];
    td::load_bf16<W>(v, x_row + c0);
    td::load_bf16<W>(g, w + c0);
#pragma unroll
    for (int k = 0; k < W; ++k) v[k] = v[k] * s * g[k];
    td::store_bf16<W>(o_row + c0, v);
  }
  if (lane == 0 && rstd != nullptr) rstd[row] = s;
}

// Per row, with g = dout * w and xhat = x * rstd: pass 1 sums g * xhat over the row; pass 2
// writes (or adds) rstd * (g - xhat * mean(g * xhat)) and, with kWeightGrad, collects
// dout * xhat per channel in this block's shared partials, added to dw once at the end.
// Shared slot of channel c (W = 8): (c % 8) * (C / 8) + c / 8, so the 32 lanes adding element
// k of their groups hit 32 consecutive words (no bank conflicts).
// dx and dout may be one buffer: a lane reads its dout values in both passes before it writes
// dx at the same places (no __restrict__ on them for that reason).
template <int W, bool kWeightGrad>
__global__ void rmsnorm_backward_kernel(bf16* dx, float* __restrict__ dw, const bf16* dout,
                                        const bf16* __restrict__ x, const bf16* __restrict__ w,
                                        const float* __restrict__ rstd, int N, int C, bool accumulate) {
  extern __shared__ float dw_s[];  // C floats, with kWeightGrad only
  const int groups = C / W;
  if constexpr (kWeightGrad) {
    for (int c = threadIdx.x; c < C; c += blockDim.x) dw_s[c] = 0.f;
    __syncthreads();
  }

  const int lane = threadIdx.x % kWarp, warps = blockDim.x / kWarp;
  for (int row = blockIdx.x * warps + threadIdx.x / kWarp; row < N; row += gridDim.x * warps) {
    const std::size_t base = static_cast<std::size_t>(row) * C;
    const float s = rstd[row];

    float sum_gx = 0.f;
    for (int c0 = lane * W; c0 < C; c0 += kWarp * W) {
      float xv[W], dy[W], wv[W];
      td::load_bf16<W>(xv, x + base + c0);
      td::load_bf16<W>(dy, dout + base + c0);
      td::load_bf16<W>(wv, w + c0);
#pragma unroll
      for (int k = 0; k < W; ++k) sum_gx += dy[k] * wv[k] * (xv[k] * s);
    }
    const float mean_gx = td::warp_sum(sum_gx) / C;

    for (int c0 = lane * W; c0 < C; c0 += kWarp * W) {
      float xv[W], dy[W], wv[W], d[W];
      td::load_bf16<W>(xv, x + base + c0);
      td::load_bf16<W>(dy, dout + base + c0);
      td::load_bf16<W>(wv, w + c0);
      if (accumulate) {
        td::load_bf16<W>(d, dx + base + c0);
      } else {
#pragma unroll
        for (int k = 0; k < W; ++k) d[k] = 0.f;
      }
#pragma unroll
      for (int k = 0; k < W; ++k) {
        const float xhat = xv[k] * s;
        d[k] += s * (dy[k] * wv[k] - xhat * mean_gx);
        if constexpr (kWeightGrad) atomicAdd(&dw_s[k * groups + c0 / W], dy[k] * xhat);
      }
      td::store_bf16<W>(dx + base + c0, d);
    }
  }
  if constexpr (kWeightGrad) {
    __syncthreads();
    for (int c = threadIdx.x; c < C; c += blockDim.x) atomicAdd(&dw[c], dw_s[(c % W) * groups + c / W]);
  }
}

bool use_vectors(int C, std::initializer_list<const void*> pointers) {
  if (C % 8 != 0) return false;
  for (const void* p : pointers)
    if (!td::aligned16(p)) return false;
  return true;
}

template <int W>
void launch_backward(bf16* dx, float* dw, const bf16* dout, const bf16* x, const bf16* w, const float* rstd, int N,
                     int C, bool accumulate, cudaStream_t stream) {
  if (dw == nullptr) {
    const int blocks = td::ceil_div(N, kBackwardBlock / kWarp);
    rmsnorm_backward_kernel<W, false>
        <<<blocks, kBackwardBlock, 0, stream>>>(dx, dw, dout, x, w, rstd, N, C, accumulate);
    return;
  }
  const auto kernel = rmsnorm_backward_kernel<W, true>;
  const std::size_t shared = static_cast<std::size_t>(C) * sizeof(float);
  if (shared > 48 * 1024) {  // above the default limit a kernel must opt in (fails past the device's maximum)
    const cudaError_t rc =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (rc != cudaSuccess) {
      (void)cudaGetLastError();  // clear it, or the next launch check would report it
      throw std::invalid_argument("fsdp kernels: rmsnorm_backward: C = " + std::to_string(C) +
                                  " needs more shared memory for dw than the device has: " + cudaGetErrorString(rc));
    }
  }
  const int blocks = std::min(td::ceil_div(N, kWeightGradBlock / kWarp), kWeightGradMaxBlocks);
  kernel<<<blocks, kWeightGradBlock, shared, stream>>>(dx, dw, dout, x, w, rstd, N, C, accumulate);
}

}  // namespace

void rmsnorm_forward(bf16* out, float* rstd, const bf16* x, const bf16* w, int N, int C, float eps,
                     cudaStream_t stream) {
  require(N >= 0 && C > 0, "rmsnorm_forward: N must be >= 0 and C > 0");
  require(eps >= 0.f, "rmsnorm_forward: eps must be >= 0");
  if (N == 0) return;
  const int blocks = td::ceil_div(N, kForwardBlock / kWarp);
  if (use_vectors(C, {out, x, w}))
    rmsnorm_forward_kernel<8><<<blocks, kForwardBlock, 0, stream>>>(out, rstd, x, w, N, C, eps);
  else
    rmsnorm_forward_kernel<1><<<blocks, kForwardBlock, 0, stream>>>(out, rstd, x, w, N, C, eps);
  check_launch("rmsnorm_forward");
}

void rmsnorm_backward(bf16* dx, float* dw, const bf16* dout, const bf16* x, const bf16* w, const float* rstd, int N,
                      int C, bool accumulate, cudaStream_t stream) {
  require(N >= 0 && C > 0, "rmsnorm_backward: N must be >= 0 and C > 0");
  if (N == 0) return;
  if (use_vectors(C, {dx, dout, x, w}))
    launch_backward<8>(dx, dw, dout, x, w, rstd, N, C, accumulate, stream);
  else
    launch_backward<1>(dx, dw, dout, x, w, rstd, N, C, accumulate, stream);
  check_launch("rmsnorm_backward");
}

}  // namespace gpuaccept::fsdp::gpu
