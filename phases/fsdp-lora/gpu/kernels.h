// The Qwen2 layers' own CUDA kernels: RMSNorm, rotary position embedding (RoPE), SwiGLU and
// LoRA's input dropout. Matmuls are cuBLASLt; the causal softmax, fp32 -> bf16 and the
// optimizer are src/train's, shared with ddp (train/causal_softmax_kernels.h,
// train/bf16_cast_kernels.h, train/optimizer_kernels.h). Each launcher enqueues on `stream`
// and returns at once; a bad argument throws std::invalid_argument, a failed launch
// std::runtime_error.
//
// Storage: activations, gradients of activations and the frozen weights the kernels read are
// bf16 ("bf16" below); rstd and the optional norm-weight gradient are fp32. All arithmetic is
// fp32 (RoPE's angles: double, see below), with one rounding to bf16 per value written.
// Shapes: N = B*T rows, C channels of the residual stream, NH query heads and NKV key/value
// heads of HD channels, I the MLP width. Row-major; where a launcher takes a row stride, row
// n of that tensor starts `stride` elements after row n-1 (>= its width), so the kernels can
// read and write inside fused projection outputs. Every launcher accepts N == 0 (no launch).
//
// Vectorised paths (16-byte bf16 accesses) are taken when widths, strides and pointers allow
// it (multiples of 8 elements, 16-byte aligned); anything else runs a one-value path with the
// same results.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "train/flash_attention_kernels.h"

namespace gpuaccept::fsdp {
struct InitPiece;  // base_init.h
}

namespace gpuaccept::fsdp::gpu {

using bf16 = __nv_bfloat16;

// ---- RMSNorm -----------------------------------------------------------------------------
// Qwen2RMSNorm over the last dimension, x (N,C) bf16, weight w (C) bf16:
//   rstd[n] = 1/sqrt(mean_c x[n,c]^2 + eps)              (fp32, saved for backward; may be nullptr)
//   out[n,c] = x[n,c] * rstd[n] * w[c]                    (fp32, rounded once to bf16)
// Hugging Face rounds x*rstd to bf16 before multiplying by w, so its out differs from this by
// at most about one bf16 rounding. out must not overlap x. Any C >= 1 (C % 8 == 0 is the fast
// path); one warp per row.
void rmsnorm_forward(bf16* out, float* rstd, const bf16* x, const bf16* w, int N, int C, float eps,
                     cudaStream_t stream);
// With xhat = x * rstd and g = dout * w (rstd from rmsnorm_forward):
//   d[n,c]  = rstd[n] * (g[n,c] - xhat[n,c] * mean_c(g[n,:] * xhat[n,:]))
//   dx      = d            when accumulate == false (overwrites dx)
//   dx     += d            when accumulate == true  (the residual stream's gradient: one
//                          fp32 add of the old bf16 dx, then one rounding)
//   dw[c]  += sum_n dout[n,c] * xhat[n,c]   (fp32, accumulated with atomics in no fixed order,
//                                            so not bitwise reproducible); dw == nullptr skips
//                                            it (the frozen base's norms need none)
// dx may be the same buffer as dout (in place: every value of dout is read before the thread
// that reads it writes dx there); otherwise dx must not overlap the inputs.
void rmsnorm_backward(bf16* dx, float* dw, const bf16* dout, const bf16* x, const bf16* w, const float* rstd, int N,
                      int C, bool accumulate, cudaStream_t stream);

// ---- RoPE --------------------------------------------------------------------------------
// Rotary position embedding, Hugging Face's rotate_half convention, in place on `heads`
// heads of HD channels per row: element d of head h in row r is x[r*row_stride + h*HD + d].
// Row r is position t = r % T of its sequence (every sequence starts at position 0). For each
// pair i < HD/2, with inv_freq_i = theta^(-2i/HD) and angle = t * inv_freq_i:
//   x'[i]      = x[i] cos(angle) - x[i+HD/2] sin(angle)
//   x'[i+HD/2] = x[i+HD/2] cos(angle) + x[i] sin(angle)
// rope_backward applies the inverse rotation (angle -> -angle) to a gradient laid out the same
// way (the rotation is orthogonal: its transpose is its inverse).
//
// Angles: t * inv_freq reaches 32767 rad at t = 32767, where an fp32 angle is off by up to
// 2e-3 rad (its ulp) and an fp32 inv_freq (as Hugging Face computes it) by as much again. So
// inv_freq_i / (2 pi) is computed in double, multiplied by t in double, reduced to a fraction
// f in [-1/2, 1/2] of a turn (exact in double), and only then cos/sin = sincospif(2f) in fp32:
// about 2e-7 absolute error at any position (fsdp-kernel-tests holds rope_table to 5e-6 up to
// t = 32767, where a plain fp32 angle is off by 1e-3).
// Hugging Face's own bf16 cos/sin tables are far coarser (2^-8 relative); this kernel
// computes the exact rotation rounded once to bf16.
//
// Qwen2's q (B,T,NH,HD) and k (B,T,NKV,HD): separately, rope_forward(q, N, T, NH, HD, NH*HD)
// and rope_forward(k, N, T, NKV, HD, NKV*HD); inside a fused qkv projection output
// (B,T,(NH+2NKV)*HD) q and k are adjacent, so one call rope_forward(qkv, N, T, NH+NKV, HD,
// (NH+2NKV)*HD) rotates both and leaves v alone. HD must be even; HD % 16 == 0 with
// row_stride % 8 == 0 and a 16-byte aligned x is the fast path.
void rope_forward(bf16* x, int rows, int T, int heads, int HD, int row_stride, double theta, cudaStream_t stream);
void rope_backward(bf16* dx, int rows, int T, int heads, int HD, int row_stride, double theta, cudaStream_t stream);
// The fp32 cos(angle) and sin(angle) the two kernels above use, for positions t < T and pairs
// i < HD/2: cos_out[t*(HD/2) + i], sin_out[t*(HD/2) + i] (for tests, or a caller's table).
void rope_table(float* cos_out, float* sin_out, int T, int HD, double theta, cudaStream_t stream);

// ---- SwiGLU ------------------------------------------------------------------------------
// Qwen2's MLP activation, gate and up (N,I) bf16, rows `in_stride` apart (I for two separate
// projection outputs; 2I for one fused gate_up output (N,2I) with up = gate + I):
//   h[n,i] = silu(gate[n,i]) * up[n,i],   silu(x) = x s(x),  s(x) = 1/(1 + e^-x)
// h rows are h_stride apart. h may be gate or up itself (same stride): each value is read by
// the thread that then writes h there.
void swiglu_forward(bf16* h, int h_stride, const bf16* gate, const bf16* up, int in_stride, int N, int I,
                    cudaStream_t stream);
// From dh (rows dh_stride apart):
//   dgate[n,i] = dh * up * silu'(gate),   silu'(x) = s(x) (1 + x (1 - s(x)))
//   dup[n,i]   = dh * silu(gate)
// dgate and dup rows are dgrad_stride apart (2I with dup = dgate + I: the fused gate_up
// gradient the backward matmul reads). Overwrites dgate and dup. In-place friendly: a thread
// reads gate, up and dh at (n, i..i+7) before it writes dgate and dup at (n, i..i+7), so an
// output may be the very buffer of an input when their strides are equal (e.g. dgate = gate,
// dup = up, dgrad_stride = in_stride: the gradient replaces the fused activation).
void swiglu_backward(bf16* dgate, bf16* dup, int dgrad_stride, const bf16* dh, int dh_stride, const bf16* gate,
                     const bf16* up, int in_stride, int N, int I, cudaStream_t stream);

// ---- LoRA dropout ------------------------------------------------------------------------
// Dropout on a LoRA adapter's input (PEFT's lora_dropout): x (N,in) bf16 ->
//   out[n,c] = x[n,c] * m[n,c],   m = keep(n,c) ? scale : 0,   scale = (float)(1 / (1 - p))
// computed as one fp32 multiply (no FMA) rounded once to bf16; a dropped value becomes x * 0
// (so -0 for negative x and NaN stays NaN, as torch's x * mask * scale).
//
// The mask is never stored: it is a function of a DropoutKey and the element's logical index
// e = n*in + c (independent of the strides), so every rank, and the backward pass, recompute
// the same mask from the same key. The RNG is splitmix64 (Steele, Lea, Flood 2014):
//   stream = splitmix64(splitmix64(splitmix64(seed) ^ step) ^ (layer << 32 | target))
//   bits   = splitmix64(stream + (e/2) * 0x9e3779b97f4a7c15)   (the (e/2)-th output of
//                                                              splitmix64 seeded with stream)
//   u      = even e: low 32 bits of bits; odd e: high 32 bits
//   keep   = u >= threshold,   threshold = min(round(p * 2^32), 2^32 - 1)
// so P(drop) = threshold / 2^32 (p to within 2^-33). dropout_keep() below is this very
// function, callable on the host (CPU references) and the device. p = 0 keeps everything
// with scale 1 (an exact copy); callers should skip the kernel then.
struct DropoutKey {
  std::uint64_t seed = 0;    // the run's seed (fold in the rank if ranks must draw different masks)
  std::uint64_t step = 0;    // distinct for every forward that needs a fresh mask, e.g.
                             // optimizer step * accumulation steps + micro-step
  std::uint32_t layer = 0;   // decoder layer
  std::uint32_t target = 0;  // which adapter of the layer, e.g. the Projection's index
};

__host__ __device__ constexpr std::uint64_t splitmix64(std::uint64_t x) {
  std::uint64_t z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
__host__ __device__ constexpr std::uint64_t dropout_stream(const DropoutKey& k) {
  return splitmix64(splitmix64(splitmix64(k.seed) ^ k.step) ^
                    ((static_cast<std::uint64_t>(k.layer) << 32) | k.target));
}
// The 64 random bits shared by elements 2j and 2j+1.
__host__ __device__ constexpr std::uint64_t dropout_bits(std::uint64_t stream, std::uint64_t j) {
  return splitmix64(stream + j * 0x9e3779b97f4a7c15ull);
}
__host__ __device__ constexpr bool dropout_keep(std::uint64_t stream, std::uint64_t e, std::uint32_t threshold) {
  const std::uint64_t bits = dropout_bits(stream, e / 2);
  const auto u = static_cast<std::uint32_t>((e & 1) ? bits >> 32 : bits);
  return u >= threshold;
}
inline std::uint32_t dropout_threshold(double p) {
  const double t = std::nearbyint(p * 4294967296.0);
  return t >= 4294967295.0 ? 0xffffffffu : (t <= 0 ? 0u : static_cast<std::uint32_t>(t));
}
inline float dropout_scale(double p) { return static_cast<float>(1.0 / (1.0 - p)); }

// out rows out_stride apart, x rows x_stride apart; 0 <= p < 1. out may be x itself (same
// stride). mask (optional, nullptr skips it): (N,in) contiguous bytes, 1 kept, 0 dropped,
// for tests to replay.
void lora_dropout_forward(bf16* out, int out_stride, const bf16* x, int x_stride, int N, int in, double p,
                          const DropoutKey& key, std::uint8_t* mask, cudaStream_t stream);
// The gradient through the same mask (the same key): with g (N,in) the gradient of the
// dropped input,
//   dx  = bf16(g * m)               when accumulate == false
//   dx  = bf16(dx + fp32(g * m))    when accumulate == true (the adapter's share of the layer
//                                   input's gradient, added to the base path's; the product is
//                                   rounded to fp32 before the add, no FMA)
// dx may be g itself (same stride, accumulate == false: the gradient masked in place).
void lora_dropout_backward(bf16* dx, int dx_stride, const bf16* g, int g_stride, int N, int in, double p,
                           const DropoutKey& key, bool accumulate, cudaStream_t stream);


// ==== The model's own kernels (gpu/qwen_model.cpp, gpu/attention.cpp, gpu/lora_linear.cpp) ====
// Same conventions as above. Where the model accumulates a gradient in fp32 (the residual
// stream's gradient and a normed input's gradient, each summed from several paths) the
// kernels below read or write fp32; the matmuls read their bf16 copies.

// ---- embedding ---------------------------------------------------------------------------
// out[n,:] = embed[tokens[n],:]      out (N,C) bf16, embed (V,C) bf16. The ids must lie in
// [0, V) (the model checks them on the host); the embedding is frozen: no backward.
void embedding_forward(bf16* out, const int* tokens, const bf16* embed, int N, int C, cudaStream_t stream);

// ---- attention head layouts --------------------------------------------------------------
// Token-major (B,T,H,HD) rows `stride` elements apart (the projections' outputs, stride >=
// H*HD) and head-major (B,H,T,HD) contiguous (one (T,HD) matrix per head, what the batched
// attention matmuls read). Pure copies; HD % 8 == 0, stride % 8 == 0 and 16-byte aligned
// pointers take 16-byte accesses.
// heads_from_tokens: dst[b,h,t,:] = src[(b*T + t)*stride + h*HD + :]
// tokens_from_heads: dst[(b*T + t)*stride + h*HD + :] = src[b,h,t,:]
void heads_from_tokens(bf16* dst, const bf16* src, int stride, int B, int T, int H, int HD, cudaStream_t stream);
void tokens_from_heads(bf16* dst, int stride, const bf16* src, int B, int T, int H, int HD, cudaStream_t stream);

// ---- RMSNorm backward into an fp32 gradient ----------------------------------------------
// rmsnorm_backward's math with fp32 dout and dx (the residual stream's gradient, summed over
// the layers in fp32): with xhat = x * rstd and g = dout * w,
//   d[n,c] = rstd[n] * (g[n,c] - xhat[n,c] * mean_c(g[n,:] * xhat[n,:]))
//   dx = d (accumulate == false) or dx += d (accumulate == true).
// x and w bf16, rstd fp32 from rmsnorm_forward. dx must not overlap dout. One warp per row.
// dx_bf16 (optional): also dx's final values rounded to bf16 (round to nearest, as
// cast_to_bf16), from the same pass.
void rmsnorm_backward_fp32(float* dx, const float* dout, const bf16* x, const bf16* w, const float* rstd, int N, int C,
                           bool accumulate, cudaStream_t stream, bf16* dx_bf16 = nullptr);

// ---- cross-entropy over fp32 logits ------------------------------------------------------
// One chunk of rows of the LM head's fp32 logits (rows, V), contiguous:
//   losses[n] = logsumexp(logits[n,:]) - logits[n, targets[n]]          (fp32)
// and, when dlogits != nullptr,
//   dlogits[n,v] = bf16(dloss * (softmax(logits[n,:])[v] - [v == targets[n]]))
// (dlogits (rows, V) contiguous bf16: the operand of the head's input-gradient matmul).
// targets must lie in [0, V). One block per row.
void cross_entropy_fp32(float* losses, bf16* dlogits, const float* logits, const int* targets, int rows, int V,
                        float dloss, cudaStream_t stream);

// ---- LoRA helpers ------------------------------------------------------------------------
// x[i] = bf16(s * x[i]) for i < n, in place (LoRA's alpha/r on the rank-r products).
void scale_bf16(bf16* x, std::size_t n, float s, cudaStream_t stream);
// lora_dropout_backward with an fp32 destination: dx[n,c] += fp32(g[n,c] * m[n,c]), the mask
// m of `key` as lora_dropout_forward draws it (the adapter's share of a normed input's
// gradient, accumulated in fp32).
void lora_dropout_backward_fp32(float* dx, int dx_stride, const bf16* g, int g_stride, int N, int in, double p,
                                const DropoutKey& key, cudaStream_t stream);

// ---- LoRA dropout of adapters that read the same input -------------------------------------
// q, k and v read the first norm's output, gate and up the second's; each adapter draws its
// own mask (its own key, as PEFT's lora_dropout modules do). These do for `count` (1..3) such
// adapters in one pass what the calls above do for each in turn, with the same bits, reading x
// (or writing dx) once instead of once per adapter.
inline constexpr int kMaxSharedDropouts = 3;
// out[t] (N, in) rows out_stride apart = lora_dropout_forward(x) with keys[t], t < count.
void lora_dropout_forward_shared(bf16* const* out, const DropoutKey* keys, int count, int out_stride, const bf16* x,
                                 int x_stride, int N, int in, double p, cudaStream_t stream);
// dx[n,c] += fp32(g[t][n,c] * m_t[n,c]) for t = 0, 1, .. count-1 in that order, each add
// rounded to fp32: lora_dropout_backward_fp32 of each (g[t], keys[t]) in turn.
void lora_dropout_backward_fp32_shared(float* dx, int dx_stride, const bf16* const* g, const DropoutKey* keys,
                                       int count, int g_stride, int N, int in, double p, cudaStream_t stream);

// ---- the matmul, in row-major terms, and a plain kernel for it ----------------------------
// Every matmul of the model is described in row-major terms (what the code means):
//   D (M,N) = op(A) (M,K) * op(B) (K,N)  [+ bias[j] on every row]  [+ C (M,N)]
// per batch entry i (A, B, C and D advanced by their strides), where op(A) = A stored (M,K)
// row-major with rows lda apart, or, with ta, A^T of A stored (K,M) (rows lda apart); the
// same for B with tb. D (and C) rows ldd apart, bf16 or (fp32_out) fp32; accumulate adds C,
// which is D itself when c == nullptr. gpu/gemm.h maps it onto cuBLASLt's column-major call;
// naive_gemm below computes it directly (fp32 sums, one thread per output): the fallback for
// a shape cuBLASLt has no algorithm for, and a second implementation for the tests.
struct RowMajorGemm {
  int M = 0, N = 0, K = 0;
  const bf16* a = nullptr;
  long long lda = 0;
  bool ta = false;
  long long stride_a = 0;
  const bf16* b = nullptr;
  long long ldb = 0;
  bool tb = false;
  long long stride_b = 0;
  void* d = nullptr;
  long long ldd = 0;
  long long stride_d = 0;
  bool fp32_out = false;
  bool accumulate = false;
  const void* c = nullptr;     // accumulate's C (D's type and layout); nullptr: D itself
  const bf16* bias = nullptr;  // (N), added to every row; nullptr: none
  int batch = 1;
};
// The fp32 value of D (before rounding) at row i, column j of batch entry z: usable on the
// host too (the test program checks the cuBLASLt mapping against it).
__host__ __device__ inline float row_major_gemm_value(const RowMajorGemm& g, int z, int i, int j) {
  const bf16* a = g.a + z * g.stride_a;
  const bf16* b = g.b + z * g.stride_b;
  float acc = 0.f;
  for (int k = 0; k < g.K; ++k) {
    const float av = __bfloat162float(g.ta ? a[static_cast<long long>(k) * g.lda + i] : a[static_cast<long long>(i) * g.lda + k]);
    const float bv = __bfloat162float(g.tb ? b[static_cast<long long>(j) * g.ldb + k] : b[static_cast<long long>(k) * g.ldb + j]);
    acc += av * bv;
  }
  if (g.bias) acc += __bfloat162float(g.bias[j]);
  if (g.accumulate) {
    const void* cbase = g.c ? g.c : g.d;
    const long long at = z * g.stride_d + static_cast<long long>(i) * g.ldd + j;
    acc += g.fp32_out ? static_cast<const float*>(cbase)[at] : __bfloat162float(static_cast<const bf16*>(cbase)[at]);
  }
  return acc;
}
void naive_gemm(const RowMajorGemm& g, cudaStream_t stream);

// ---- Random frozen base (base_init.h) ------------------------------------------------------
// buffer[piece.dest_offset + i] = bf16(base_init_value(seed, piece.tensor, piece.first + i,
// piece.half_width)) for i < piece.numel: one rank's part of a tensor, the same bits the host's
// host_layer_shard / host_vocab_shard compute.
void init_base_piece(bf16* buffer, const InitPiece& piece, std::uint64_t seed, cudaStream_t stream);

// ---- flash attention: src/train's, shared with ddp (train/flash_attention_kernels.h) -------
// Heads of 128 here (Qwen2), grouped key/value heads, q, k, v token-major and apart:
// FlashShape::token_major. gpu/attention.h's FlashAttention is the model's user.
using train::FlashKernelResources;
using train::FlashShape;
using train::flash_attention_backward;
using train::flash_attention_forward;
using train::flash_attention_supported;
using train::flash_backward_default_variant;
using train::flash_backward_ds_workspace_elems;
using train::flash_backward_stores_ds;
using train::flash_backward_variant_available;
using train::flash_forward_default_variant;
using train::flash_forward_variant_available;
using train::flash_kernel_resources;
using train::kFlashBackwardVariants;
using train::kFlashBlock;
using train::kFlashForwardVariants;

}  // namespace gpuaccept::fsdp::gpu
