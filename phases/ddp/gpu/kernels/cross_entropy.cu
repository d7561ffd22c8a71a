// Softmax cross-entropy fused with its gradient, one block per row of Vp logits (llm.c's
// fused classifier). Two kernels:
// - cached, where two blocks' rows fit in an SM's shared memory (GPT-2's 50,304 logits are
//   98 KiB; an H100's or H200's SM holds 228 KiB): the row comes from HBM once, by cp.async
//   (every 16-byte piece of it in flight at once, no register held), and three passes over
//   shared memory take its max, its exponentials (kept there in place of the logits) and their
//   sum, and then the gradient, written back. 1.65 GB read and 1.65 GB written a GPT-2 124M
//   micro-batch of 16 x 1024: 0.97 ms on an H200 with two exponentials a logit, where the
//   two-pass kernel took about 1.2 (2026-11-28); one a logit saved 0.1 ms more a step.
// - two-pass elsewhere (and for the losses alone): the max and the sum online (as in
//   causal_softmax.cu) in one read, then a second read for the gradient, mostly from HBM again.
#include "common.cuh"

#include "train/kernels/tensor_core.cuh"

namespace gpuaccept::ddp::gpu {

using namespace detail;

namespace {

constexpr int kBlock = 512;
constexpr int kGroup = 8;  // bf16 in 16 bytes
constexpr float kLog2e = 1.4426950408889634f;

// Both kernels: losses[n] = log(sum_{v<V} exp(x_v - M)) + M - x_target, M = max_{v<V} x_v;
// then, when dloss != 0, x_v <- dloss * (exp(x_v - M) / sum - [v == target]) for v < V, 0 for
// v >= V.

// Vp % 8 == 0 and the logits 16-byte aligned; dynamic shared memory: the row, (Vp) bf16.
// exp(x - M) is computed as exp2(x log2(e) - M log2(e)): one FMA and the hardware's exp2.
__global__ void __launch_bounds__(kBlock) cross_entropy_cached_kernel(bf16* logits, float* __restrict__ losses,
                                                                      const int* __restrict__ targets, int V, int Vp,
                                                                      float dloss) {
  extern __shared__ int4 row[];  // (Vp / 8) groups of 8 bf16
  bf16* x_row = logits + static_cast<std::size_t>(blockIdx.x) * Vp;
  const int groups = Vp / kGroup, full_groups = V / kGroup;  // groups [0, full_groups) lie below V
  for (int g = threadIdx.x; g < groups; g += blockDim.x) train::tc::copy_async16(&row[g], x_row + g * kGroup);
  train::tc::commit();
  const int target = targets[blockIdx.x];
  train::tc::wait<0>();
  __syncthreads();
  const bf16* row_bf16 = reinterpret_cast<const bf16*>(row);
  const float x_target = __bfloat162float(row_bf16[target]);

  float m = -INFINITY;
  for (int g = threadIdx.x; g < groups; g += blockDim.x) {
    float x[kGroup];
    load_bf16<kGroup>(x, row_bf16 + g * kGroup);
#pragma unroll
    for (int k = 0; k < kGroup; ++k)
      if (g < full_groups || g * kGroup + k < V) m = fmaxf(m, x[k]);
  }
  const float row_max = block_max(m);
  const float shift = row_max * kLog2e;

  // exp(x - M) once per logit: summed, and kept in place of the row (bf16) for the gradient.
  bf16* e_row = reinterpret_cast<bf16*>(row);
  float sum = 0.f;
  for (int g = threadIdx.x; g < groups; g += blockDim.x) {
    float x[kGroup];
    load_bf16<kGroup>(x, row_bf16 + g * kGroup);
#pragma unroll
    for (int k = 0; k < kGroup; ++k) {
      const bool real = g < full_groups || g * kGroup + k < V;
      x[k] = real ? exp2f(fmaf(x[k], kLog2e, -shift)) : 0.f;
      sum += x[k];
    }
    store_bf16<kGroup>(e_row + g * kGroup, x);
  }
  const float row_sum = block_sum(sum);
  if (threadIdx.x == 0) losses[blockIdx.x] = logf(row_sum) + row_max - x_target;

  // dloss * softmax from the kept exponentials (one more bf16 rounding, 2^-9 relative, before
  // the gradient's own); the target's, p - 1, from its logit in fp32, where the rounding of a p
  // near 1 would be a large part of p - 1.
  const float scale = dloss / row_sum;
  const float target_grad = exp2f(fmaf(x_target, kLog2e, -shift)) * scale - dloss;
  for (int g = threadIdx.x; g < groups; g += blockDim.x) {
    float e[kGroup];
    load_bf16<kGroup>(e, e_row + g * kGroup);
#pragma unroll
    for (int k = 0; k < kGroup; ++k) e[k] = g * kGroup + k == target ? target_grad : e[k] * scale;
    store_bf16<kGroup>(x_row + g * kGroup, e);
  }
}

template <int W>
__global__ void __launch_bounds__(kBlock) cross_entropy_two_pass_kernel(bf16* logits, float* __restrict__ losses,
                                                                        const int* __restrict__ targets, int V, int Vp,
                                                                        float dloss) {
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

// Whether the cached kernel takes rows of Vp logits here: at least two of its blocks an SM
// (one keeps too little in flight beside its own passes over shared memory).
bool cached_fits(int Vp) {
  const auto kernel = cross_entropy_cached_kernel;
  const int bytes = Vp * static_cast<int>(sizeof(bf16));
  int blocks = 0;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) != cudaSuccess ||
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared) !=
          cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kBlock, bytes) != cudaSuccess) {
    (void)cudaGetLastError();  // more than the device holds: not an error, the two-pass kernel runs
    return false;
  }
  return blocks >= 2;
}

}  // namespace

void cross_entropy_forward_backward(bf16* logits, float* losses, const int* targets, int N, int V, int Vp,
                                    float dloss, cudaStream_t stream) {
  require(N >= 0, "cross_entropy_forward_backward: negative N");
  require(V > 0 && V <= Vp, "cross_entropy_forward_backward: need 0 < V <= Vp");
  if (N == 0) return;
  const bool vectors = Vp % kGroup == 0 && aligned16(logits);
  if (vectors && dloss != 0.f && cached_fits(Vp))
    cross_entropy_cached_kernel<<<N, kBlock, static_cast<std::size_t>(Vp) * sizeof(bf16), stream>>>(
        logits, losses, targets, V, Vp, dloss);
  else if (vectors)
    cross_entropy_two_pass_kernel<kGroup><<<N, kBlock, 0, stream>>>(logits, losses, targets, V, Vp, dloss);
  else
    cross_entropy_two_pass_kernel<1><<<N, kBlock, 0, stream>>>(logits, losses, targets, V, Vp, dloss);
  check_launch("cross_entropy_forward_backward");
}

}  // namespace gpuaccept::ddp::gpu
