// Softmax cross-entropy fused with its gradient, one block per row of Vp logits (llm.c's
// fused classifier). The logits are read twice: once for the max and sum (online, as in
// causal_softmax.cu), once to overwrite them with the gradient.
#include "common.cuh"

namespace gpuaccept::ddp::gpu {

using namespace detail;

namespace {

constexpr int kBlock = 512;

// losses[n] = log(sum_{v<V} exp(x_v - M)) + M - x_target, M = max_{v<V} x_v; then, when
// dloss != 0, x_v <- dloss * (exp(x_v - M) / sum - [v == target]) for v < V, 0 for v >= V.
template <int W>
__global__ void cross_entropy_kernel(bf16* logits, float* __restrict__ losses, const int* __restrict__ targets,
                                     int V, int Vp, float dloss) {
  bf16* x_row = logits + static_cast<std::size_t>(blockIdx.x) * Vp;
  const int target = targets[blockIdx.x];
  // Read before the row is overwritten: the block reductions below separate it from
  // every thread's writes.
  const float x_target = __bfloat162float(x_row[target]);

  float m = -INFINITY, sum = 0.f;
  for (int v0 = threadIdx.x * W; v0 < V; v0 += blockDim.x * W) {
    float x[W];
    load_bf16<W>(x, x_row + v0);  // whole group lies inside the row: Vp % W == 0
    float group_max = -INFINITY;
#pragma unroll
    for (int k = 0; k < W; ++k)
      if (v0 + k < V) group_max = fmaxf(group_max, x[k]);
    const float new_m = fmaxf(m, group_max);
    float group_sum = 0.f;
#pragma unroll
    for (int k = 0; k < W; ++k)
      if (v0 + k < V) group_sum += expf(x[k] - new_m);
    sum = sum * expf(m - new_m) + group_sum;
    m = new_m;
  }
  const float row_max = block_max(m);
  const float row_sum = block_sum(sum * expf(m - row_max));  // threads with no columns add 0
  if (threadIdx.x == 0) losses[blockIdx.x] = logf(row_sum) + row_max - x_target;
  if (dloss == 0.f) return;

  const float inv_sum = 1.f / row_sum;
  for (int v0 = threadIdx.x * W; v0 < Vp; v0 += blockDim.x * W) {
    float x[W];
    load_bf16<W>(x, x_row + v0);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const int v = v0 + k;
      const float p = expf(x[k] - row_max) * inv_sum;
      x[k] = v < V ? dloss * (p - (v == target ? 1.f : 0.f)) : 0.f;
    }
    store_bf16<W>(x_row + v0, x);
  }
}

}  // namespace

void cross_entropy_forward_backward(bf16* logits, float* losses, const int* targets, int N, int V, int Vp,
                                    float dloss, cudaStream_t stream) {
  require(N >= 0, "cross_entropy_forward_backward: negative N");
  require(V > 0 && V <= Vp, "cross_entropy_forward_backward: need 0 < V <= Vp");
  if (N == 0) return;
  if (Vp % 8 == 0 && aligned16(logits))
    cross_entropy_kernel<8><<<N, kBlock, 0, stream>>>(logits, losses, targets, V, Vp, dloss);
  else
    cross_entropy_kernel<1><<<N, kBlock, 0, stream>>>(logits, losses, targets, V, Vp, dloss);
  check_launch("cross_entropy_forward_backward");
}

}  // namespace gpuaccept::ddp::gpu
