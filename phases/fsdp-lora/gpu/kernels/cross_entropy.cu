// Softmax cross-entropy over one chunk of fp32 logits, with its bf16 gradient (kernels.h gives
// the math). One block per row: an online max and sum over the row (as ddp's
// cross_entropy.cu), a block reduction, then, for the gradient, a second pass that rereads the
// row (from L2 for rows that fit) and writes bf16. The logits stay fp32 until here: Qwen2's
// logits reach tens, where a bf16 logit is off by ~0.1 nats.
#include "fsdp-lora/gpu/kernels/common.cuh"

namespace gpuaccept::fsdp::gpu {

namespace {

namespace td = detail::td;

constexpr int kBlock = 512;

using detail::check_launch;
using detail::require;

__global__ void cross_entropy_fp32_kernel(float* __restrict__ losses, bf16* __restrict__ dlogits,
                                          const float* __restrict__ logits, const int* __restrict__ targets, int V,
                                          float dloss) {
  const std::size_t row = blockIdx.x;
  const float* x = logits + row * V;
  const int target = targets[row];

  float m = -INFINITY, sum = 0.f;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    const float xv = x[v];
    if (xv > m) {
      sum = sum * expf(m - xv) + 1.f;  // exp(-inf) = 0 on the first value
      m = xv;
    } else {
      sum += expf(xv - m);
    }
  }
  const float row_max = td::block_max(m);
  // A thread with no columns has m = -inf and sum = 0: it adds 0 (exp(-inf) = 0, 0 * 0).
  const float row_sum = td::block_sum(m == -INFINITY ? 0.f : sum * expf(m - row_max));
  const float lse = logf(row_sum) + row_max;
  if (threadIdx.x == 0) losses[row] = lse - x[target];
  if (dlogits == nullptr) return;

  bf16* d = dlogits + row * V;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    const float p = expf(x[v] - lse);
    d[v] = __float2bfloat16(dloss * (p - (v == target ? 1.f : 0.f)));
  }
}

}  // namespace

void cross_entropy_fp32(float* losses, bf16* dlogits, const float* logits, const int* targets, int rows, int V,
                        float dloss, cudaStream_t stream) {
  require(rows >= 0 && V > 0, "cross_entropy_fp32: rows must be >= 0 and V > 0");
  if (rows == 0) return;
  cross_entropy_fp32_kernel<<<rows, kBlock, 0, stream>>>(losses, dlogits, logits, targets, V, dloss);
  check_launch("cross_entropy_fp32");
}

}  // namespace gpuaccept::fsdp::gpu
