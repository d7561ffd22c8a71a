// The GPT-2 layers' own CUDA kernels (everything that is not a matmul; matmuls are
// cuBLASLt, src/train/matmul.h). Each launcher enqueues on `stream` and returns at once.
//
// Storage: activations and the weights the kernels read are bf16 ("bf16" below);
// gradients of parameters and optimizer state are fp32. All arithmetic is fp32.
// Shapes follow ../README.md: N = B*T rows, C channels, NH heads of HS = C/NH, Vp the
// padded vocabulary (a multiple of 128; only the first V entries are real tokens).
// Every tensor is row-major and contiguous.
//
// What runs after the gradient all-reduce (global norm, clipping, AdamW) is src/train's,
// shared with fsdp-lora (train/optimizer_kernels.h): deterministic bit for bit, so replicas
// that start equal stay equal. So are the causal softmax of the attention as batched matmuls
// (train/causal_softmax_kernels.h) and fp32 <-> bf16: the weights from the master copy, the
// gradient buckets packed for the all-reduce (train/bf16_cast_kernels.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace gpuaccept::ddp::gpu {

using bf16 = __nv_bfloat16;

// out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]          out (N,C), wte (Vp,C), wpe (maxT,C)
void encoder_forward(bf16* out, const int* tokens, const bf16* wte, const bf16* wpe, int B, int T, int C,
                     cudaStream_t stream);
// dwte[row(tokens[b,t]),:] += dout[b,t,:];  dwpe[t,:] += sum_b dout[b,t,:]   (both fp32, accumulated)
// row(v) = row_of_token[v] (token_rows below), or v itself when row_of_token is nullptr.
void encoder_backward(float* dwte, const int* row_of_token, float* dwpe, const bf16* dout, const int* tokens, int B,
                      int T, int C, cudaStream_t stream);

// The token embedding's gradient as rows of the tokens in use (gpu/embedding_rows.h).
// token_rows: the tokens v < V with present[v] != 0 numbered 0, 1, ... in increasing order:
// row_of_token[v] (-1 when absent), token_of_row[r], and *count rows (all on the device).
void token_rows(int* row_of_token, int* token_of_row, int* count, const unsigned char* present, int V,
                cudaStream_t stream);
// rows[0 .. *count * C) = 0; max_rows bounds *count (it sizes the grid).
void zero_token_rows(float* rows, const int* count, int max_rows, int C, cudaStream_t stream);
// dwte[token_of_row[r],:] += rows[r,:] for r < *count.
void add_token_rows(float* dwte, const float* rows, const int* token_of_row, const int* count, int max_rows, int C,
                    cudaStream_t stream);

// LayerNorm over the last dimension, biased variance, eps 1e-5:
//   mean[n], rstd[n] = 1/sqrt(var + eps), out = (inp - mean) * rstd * weight + bias.
void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* weight, const bf16* bias,
                       int N, int C, cudaStream_t stream);
// With xhat = (inp - mean) * rstd and g = dout * weight:
//   dinp += rstd * (g - mean_c(g) - xhat * mean_c(g * xhat))      (ACCUMULATES into dinp)
//   dweight += sum_n dout * xhat,  dbias += sum_n dout           (fp32, accumulated)
//   dinp_sums += sum_n dinp, the new dinp as stored               (fp32, accumulated; skipped
//                                                                  when dinp_sums is nullptr)
// dinp_sums saves a pass over dinp where it is also the output gradient of a linear layer
// whose bias gradient is its column sums (bias_backward's): the residual stream's.
void layernorm_backward(bf16* dinp, float* dweight, float* dbias, float* dinp_sums, const bf16* dout,
                        const bf16* inp, const bf16* weight, const float* mean, const float* rstd, int N, int C,
                        cudaStream_t stream);

// out = a + b, elementwise over n values.
void residual_forward(bf16* out, const bf16* a, const bf16* b, std::size_t n, cudaStream_t stream);

// GELU, tanh approximation: y = x/2 * (1 + tanh(s(x + 0.044715 x^3))), s = sqrt(2/pi).
void gelu_forward(bf16* out, const bf16* inp, std::size_t n, cudaStream_t stream);
// d = d * gelu'(inp), in place.
void gelu_backward_inplace(bf16* d, const bf16* inp, std::size_t n, cudaStream_t stream);

// Attention head layout. qkv (B,T,3C) holds q, k, v side by side, each (NH, HS) per row.
// split_qkv:   q,k,v (B,NH,T,HS)  <- qkv (B,T,3,NH,HS)
// merge_qkv:   dqkv (B,T,3,NH,HS) <- dq,dk,dv (B,NH,T,HS)       (the inverse; overwrites)
// merge_heads: out (B,T,NH,HS)    <- y (B,NH,T,HS)
// split_heads: y (B,NH,T,HS)      <- out (B,T,NH,HS)             (the inverse; overwrites)
void split_qkv(bf16* q, bf16* k, bf16* v, const bf16* qkv, int B, int T, int NH, int HS, cudaStream_t stream);
void merge_qkv(bf16* dqkv, const bf16* dq, const bf16* dk, const bf16* dv, int B, int T, int NH, int HS,
               cudaStream_t stream);
void merge_heads(bf16* out, const bf16* y, int B, int T, int NH, int HS, cudaStream_t stream);
void split_heads(bf16* y, const bf16* out, int B, int T, int NH, int HS, cudaStream_t stream);

// The causal attention without the (T, T) matrix is src/train's, shared with fsdp-lora
// (train/flash_attention_kernels.h): ddp reads q, k, v in place from the qkv projection's
// (B, T, 3, NH, 64) output (FlashShape::packed_qkv) and writes dq, dk, dv into its gradient.

// Softmax cross-entropy over the first V of Vp logits per row (the padding is ignored):
//   losses[n] = logsumexp(logits[n,:V]) - logits[n, targets[n]]
// and, when dloss != 0, logits is overwritten in place with its gradient
//   dlogits[n,v] = dloss * (softmax[n,v] - [v == targets[n]]) for v < V, 0 for v >= V.
// dloss is the weight of each position in the loss (1/(N * accumulation steps)).
void cross_entropy_forward_backward(bf16* logits, float* losses, const int* targets, int N, int V, int Vp,
                                    float dloss, cudaStream_t stream);

// dbias[o] += sum_n dout[n,o]      dout (N,OC) bf16, dbias (OC) fp32
void bias_backward(float* dbias, const bf16* dout, int N, int OC, cudaStream_t stream);
// The same from dout's sums by blocks of rows, already made (the flash attention backward's
// column sums of dq, dk, dv): dbias[o] += sum_r block_sums[r,o], rows in order.
//   block_sums (rows,OC) fp32, dbias (OC) fp32
void add_block_sums(float* dbias, const float* block_sums, int rows, int OC, cudaStream_t stream);

// The copy-engine all-reduce's average of one slice (gpu/gradient_sync.h): every rank's copy
// of the slice, in rank order, summed in fp32 and multiplied by 1/count (exact for 2, 4, 8, 16
// ranks; another fp32 rounding otherwise), then rounded to bf16.
//   out[i] = bf16((in.p[0][i] + in.p[1][i] + ... + in.p[count-1][i]) * (1/count))      (n) each
// out may be one of the inputs (each value is read and written by the same thread).
inline constexpr int kMaxAveragedSlices = 16;
struct Bf16Slices {
  const bf16* p[kMaxAveragedSlices] = {};
  int count = 0;
};
void average_bf16(bf16* out, const Bf16Slices& in, std::size_t n, cudaStream_t stream);

// How many times the backward's reductions have reallocated their device scratch: a CUDA
// graph captured at one value holds a freed address at another (gpu/model_graphs.h).
std::uint64_t reduction_scratch_generation();

}  // namespace gpuaccept::ddp::gpu
