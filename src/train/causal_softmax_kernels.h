// The causal softmax of both training phases' attention as batched matmuls (ddp's GEMM
// attention, fsdp-lora's GemmAttention): the (T, T) scores of each head in, the attention
// weights out, and back. Each launcher enqueues on `stream` and returns at once; a bad
// argument throws std::invalid_argument, a failed launch a CallError (common/error.h).
// Storage bf16, arithmetic fp32. tests/gpu/ddp_kernels_test.cu checks both against a
// double-precision CPU loop.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace gpuaccept::train {

using bf16 = __nv_bfloat16;

// Causal softmax over each of BH (T,T) score matrices, row t1 over columns t2 <= t1:
//   att[t1,t2] = exp(scale*pre[t1,t2] - m) / sum_{t<=t1} exp(scale*pre[t1,t] - m), 0 for t2 > t1.
// The upper triangle of `pre` is never read (it may hold anything); att's is written 0.
void causal_softmax_forward(bf16* att, const bf16* pre, float scale, int BH, int T, cudaStream_t stream);
// dpre[t1,t2] = scale * att[t1,t2] * (datt[t1,t2] - sum_{t<=t1} att[t1,t] datt[t1,t]) for t2 <= t1, else 0.
// dpre may alias datt (in place).
void causal_softmax_backward(bf16* dpre, const bf16* datt, const bf16* att, float scale, int BH, int T,
                             cudaStream_t stream);

}  // namespace gpuaccept::train
