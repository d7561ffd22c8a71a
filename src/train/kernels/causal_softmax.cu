// Causal softmax over the rows of BH (T,T) score matrices, one warp per row. Lane L owns
// the groups of W columns starting at W*L, W*(L+32), ...; a group that straddles the
// diagonal is loaded whole but its columns past t1 are never used (they may hold NaN).
// Both training phases' attention as batched matmuls runs around these (ddp's where its flash
// kernels are off or do not take the shape, fsdp-lora's GemmAttention):
// train/causal_softmax_kernels.h.
#include "train/causal_softmax_kernels.h"
#include "train/kernels/common.cuh"

namespace gpuaccept::train {

using namespace detail;

namespace {

constexpr int kBlock = 256;  // 8 rows per block

// att[t1,t2] = exp(scale*pre[t1,t2] - m) / sum, over t2 <= t1; 0 past the diagonal.
// Each lane keeps a running max m and a sum rescaled whenever m grows (online softmax);
// the lanes then agree on the row's max and rescale their sums to it.
template <int W>
__global__ void causal_softmax_forward_kernel(bf16* __restrict__ att, const bf16* __restrict__ pre, float scale,
                                              int rows, int T) {
  const int lane = threadIdx.x % kWarp;
  const int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (row >= rows) return;  // the whole warp leaves together
  const int t1 = row % T;
  const bf16* p = pre + static_cast<std::size_t>(row) * T;
  bf16* a = att + static_cast<std::size_t>(row) * T;

  float m = -INFINITY, sum = 0.f;
  for (int t0 = lane * W; t0 <= t1; t0 += kWarp * W) {
    float x[W];
    load_bf16<W>(x, p + t0);
    float group_max = -INFINITY;
#pragma unroll
    for (int k = 0; k < W; ++k)
      if (t0 + k <= t1) group_max = fmaxf(group_max, scale * x[k]);
    const float new_m = fmaxf(m, group_max);
    float group_sum = 0.f;
#pragma unroll
    for (int k = 0; k < W; ++k)
      if (t0 + k <= t1) group_sum += expf(scale * x[k] - new_m);
    sum = sum * expf(m - new_m) + group_sum;  // exp(-inf) = 0 on the first group
    m = new_m;
  }
  const float row_max = warp_max(m);
  // A lane with no columns has m = -inf and sum = 0, and adds 0.
  const float inv_sum = 1.f / warp_sum(sum * expf(m - row_max));

  for (int t0 = lane * W; t0 < T; t0 += kWarp * W) {
    float y[W];
    if (t0 <= t1) {
      float x[W];
      load_bf16<W>(x, p + t0);
#pragma unroll
      for (int k = 0; k < W; ++k) y[k] = t0 + k <= t1 ? expf(scale * x[k] - row_max) * inv_sum : 0.f;
    } else {
#pragma unroll
      for (int k = 0; k < W; ++k) y[k] = 0.f;
    }
    store_bf16<W>(a + t0, y);
  }
}

// dpre[t1,t2] = scale * att[t1,t2] * (datt[t1,t2] - dot), dot = sum_{t<=t1} att[t1,t] datt[t1,t].
// dpre may alias datt: a lane reads and writes only its own groups, and reads each group
// before writing it, so the in-place update needs no barrier.
template <int W>
__global__ void causal_softmax_backward_kernel(bf16* dpre, const bf16* datt, const bf16* __restrict__ att,
                                               float scale, int rows, int T) {
  const int lane = threadIdx.x % kWarp;
  const int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (row >= rows) return;
  const int t1 = row % T;
  const std::size_t base = static_cast<std::size_t>(row) * T;

  float dot = 0.f;
  for (int t0 = lane * W; t0 <= t1; t0 += kWarp * W) {
    float y[W], dy[W];
    load_bf16<W>(y, att + base + t0);
    load_bf16<W>(dy, datt + base + t0);
#pragma unroll
    for (int k = 0; k < W; ++k)
      if (t0 + k <= t1) dot += y[k] * dy[k];
  }
  dot = warp_sum(dot);

  for (int t0 = lane * W; t0 < T; t0 += kWarp * W) {
    float g[W];
    if (t0 <= t1) {
      float y[W], dy[W];
      load_bf16<W>(y, att + base + t0);
      load_bf16<W>(dy, datt + base + t0);
#pragma unroll
      for (int k = 0; k < W; ++k) g[k] = t0 + k <= t1 ? scale * y[k] * (dy[k] - dot) : 0.f;
    } else {
#pragma unroll
      for (int k = 0; k < W; ++k) g[k] = 0.f;
    }
    store_bf16<W>(dpre + base + t0, g);
  }
}

}  // namespace

void causal_softmax_forward(bf16* att, const bf16* pre, float scale, int BH, int T, cudaStream_t stream) {
  require(BH >= 0 && T >= 0, "causal_softmax_forward: negative size");
  const long long rows = static_cast<long long>(BH) * T;
  if (rows == 0) return;
  require(rows <= INT32_MAX, "causal_softmax_forward: BH*T must fit in int");
  const unsigned blocks = static_cast<unsigned>(ceil_div<long long>(rows, kBlock / kWarp));
  if (T % 8 == 0 && aligned16(att) && aligned16(pre))
    causal_softmax_forward_kernel<8><<<blocks, kBlock, 0, stream>>>(att, pre, scale, static_cast<int>(rows), T);
  else
    causal_softmax_forward_kernel<1><<<blocks, kBlock, 0, stream>>>(att, pre, scale, static_cast<int>(rows), T);
  check_launch("causal_softmax_forward");
}

void causal_softmax_backward(bf16* dpre, const bf16* datt, const bf16* att, float scale, int BH, int T,
                             cudaStream_t stream) {
  require(BH >= 0 && T >= 0, "causal_softmax_backward: negative size");
  const long long rows = static_cast<long long>(BH) * T;
  if (rows == 0) return;
  require(rows <= INT32_MAX, "causal_softmax_backward: BH*T must fit in int");
  const unsigned blocks = static_cast<unsigned>(ceil_div<long long>(rows, kBlock / kWarp));
  if (T % 8 == 0 && aligned16(dpre) && aligned16(datt) && aligned16(att))
    causal_softmax_backward_kernel<8><<<blocks, kBlock, 0, stream>>>(dpre, datt, att, scale, static_cast<int>(rows), T);
  else
    causal_softmax_backward_kernel<1><<<blocks, kBlock, 0, stream>>>(dpre, datt, att, scale, static_cast<int>(rows), T);
  check_launch("causal_softmax_backward");
}

}  // namespace gpuaccept::train
