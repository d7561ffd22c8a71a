// The optimizer's CUDA kernels, shared by both training phases (ddp: every GPT-2 weight,
// fsdp-lora: the flat LoRA buffer): the global gradient norm, the clipping factor, AdamW.
// Each launcher enqueues on `stream` and returns at once. Gradients and optimizer state are
// fp32, the weights the matmuls read bf16; all arithmetic is fp32.
//
// Everything here runs after the gradient all-reduce and is deterministic bit for bit (no
// atomics, no launch shape that depends on the device), so replicas that start equal stay
// equal: the replica checks of both phases compare hashes of the results.
// The formulas below are the CPU reference tests/gpu/ddp_kernels_test.cu checks them against.
#pragma once

#include <cstddef>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace gpuaccept::train {

using bf16 = __nv_bfloat16;

// Sum of squares of g[0..n), deterministic: a fixed grid writes one partial sum per block
// to `partials` (kNormPartials floats), then one block adds them in a fixed order into
// *out (fp32, overwritten). The same input gives the same bits on every GPU.
inline constexpr int kNormPartials = 1024;
void sum_of_squares(float* out, float* partials, const float* g, std::size_t n, cudaStream_t stream);

// AdamW on n parameters, PyTorch's form (decoupled weight decay):
//   g = grad * grad_scale  (grad_scale: 1/world averaging already done by NCCL; clipping factor here)
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   mhat = m / (1 - b1^t);  vhat = v / (1 - b2^t)
//   master -= lr * (mhat / (sqrt(vhat) + eps) + weight_decay * master)
//   params = bf16(master)
// grad_scale is read from device memory (computed there from the global norm), so the
// step needs no host round trip. t counts from 1.
struct AdamW {
  float lr, beta1, beta2, eps, weight_decay;
  int t;
};
void adamw_update(float* master, bf16* params, float* m, float* v, const float* grad, const float* grad_scale,
                  std::size_t n, AdamW h, cudaStream_t stream);

// Where a flat buffer of several tensors decays: span s covers the parameters
// [end[s - 1], end[s]) (from 0 for the first), in order, the last ending at n; those of a span
// with decays[s] step with h.weight_decay, the others with 0. One launch for a whole model
// (ddp: 16 tensors, matrices decaying, biases and LayerNorms not), each parameter's arithmetic
// the same as that of a launch per tensor.
inline constexpr int kMaxDecaySpans = 16;
struct DecaySpans {
  std::size_t end[kMaxDecaySpans] = {};
  bool decays[kMaxDecaySpans] = {};
  int count = 0;
  // Appends [end of the last span, end), merged into the last span when it decays alike.
  void add(std::size_t span_end, bool decay);
};
void adamw_update(float* master, bf16* params, float* m, float* v, const float* grad, const float* grad_scale,
                  std::size_t n, AdamW h, const DecaySpans& spans, cudaStream_t stream);

// *scale = max_norm / max(sqrt(*sumsq), max_norm) (1 when the norm is within max_norm, no
// clipping when max_norm <= 0); *norm = sqrt(*sumsq). One thread.
void clip_scale(float* scale, float* norm, const float* sumsq, float max_norm, cudaStream_t stream);

}  // namespace gpuaccept::train
