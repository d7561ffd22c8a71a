// GPT-2 on one GPU: parameters, gradients, activations, and the forward and backward
// passes written out layer by layer (the same math as ../cpu_reference.cpp, which the
// gradient check compares against). Optimizer and communication live outside
// (trainer.h, gradient_sync.h); backward() tells them when each layer's gradients are
// final, so they can be all-reduced while the layers below are still being computed.
//
// Precision: fp32 master weights, a bf16 copy the matmuls read, bf16 activations, fp32
// parameter gradients. The vocabulary is padded to a multiple of 128 (aligned matmuls);
// the padding rows of wte stay zero and get no gradient.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cuda_handles.h"
#include "ddp/gpt_config.h"
#include "ddp/gpu/kernels.h"
#include "ddp/gpu/embedding_rows.h"
#include "ddp/grad_buckets.h"
#include "train/flash_attention_kernels.h"
#include "train/matmul.h"
#include "ddp/param_layout.h"

namespace gpuaccept::ddp::gpu {

using train::Epilogue;
using train::GemmShape;
using train::Matmul;

// The vocabulary rounded up to a multiple of 128, as llm.c does (50257 -> 50304).
int padded_vocab(int vocab);
// `config` with its vocabulary padded: the shape the GPU buffers have.
GptConfig padded(const GptConfig& config);
// Weights in the CPU reference's layout (real vocabulary) to the GPU's (padded: wte's
// extra rows are zero), as fp32.
std::vector<float> to_padded_master(const GptConfig& config, std::span<const double> params);

// How the model computes, where there is a choice (both ways give the same math; the
// gradient check runs both).
struct ModelOptions {
  bool allow_fusion = true;     // cuBLASLt epilogues for the residual adds and GELU, where available
  bool flash_attention = true;  // fused attention (train/flash_attention_kernels.h), else GEMMs + softmax
  bool matmul_autotune = true;  // time cuBLASLt's candidate algorithms per shape (src/train/matmul.h)
};

class GptModel {
 public:
  // config: the real vocabulary; B sequences of T tokens per micro-batch (T <= max_seq).
  // Throws std::invalid_argument when channels is not a multiple of 8 (aligned matmuls).
  GptModel(const GptConfig& config, int B, int T, ModelOptions options = {});

  const GptConfig& config() const { return config_; }  // real vocabulary
  const ParamLayout& layout() const { return layout_; }  // padded vocabulary
  std::size_t num_params() const { return layout_.total(); }
  int B() const { return B_; }
  int T() const { return T_; }
  std::size_t tokens_per_micro_batch() const { return static_cast<std::size_t>(B_) * T_; }

  float* master() const { return master_.get(); }  // fp32, layout()
  bf16* params() const { return params_.get(); }   // bf16 copy of master
  float* grads() const { return grads_.get(); }    // fp32, layout()
  int* tokens() const { return tokens_.get(); }    // (B, T) device input
  int* targets() const { return targets_.get(); }  // (B, T)
  const float* losses() const { return losses_.get(); }  // (B*T) of the last forward
  // Bytes of device memory this model holds.
  std::size_t device_bytes() const;
  // "residual+gelu", "residual", "gelu" or "none": the epilogues in use, for the log.
  std::string fusions() const;
  // "flash" or "gemm+softmax": how attention is computed.
  std::string attention() const { return flash_ ? "flash" : "gemm+softmax"; }

  // Uploads fp32 master weights in layout() order and refreshes the bf16 copy.
  void set_master(std::span<const float> host, cudaStream_t stream);
  // The bf16 weights from the fp32 master already on the device (after a checkpoint's restore).
  void refresh_params(cudaStream_t stream);

  // Forward pass over tokens()/targets(): per-position losses into losses(). With
  // dloss != 0 the logits are replaced by d(loss)/d(logits) scaled by dloss (the weight of
  // one position in the step's loss), ready for backward().
  void forward(float dloss, cudaStream_t stream);

  // Backward pass after forward(dloss != 0) into grads(): Grads::Overwrite for a step's first
  // micro-batch (whatever grads() held is replaced; nothing needs zeroing before), then
  // Grads::Accumulate for the others, which add to it. The token embedding's part of wte's
  // gradient accumulates into embedding_rows() instead (planned for this step's tokens
  // before the step's first forward, and waited for on `stream` before each backward; add
  // it into grads() with embedding_rows().add_into once the step's gradients are reduced).
  // layer_done(l) is called (on the host, after the work is enqueued on `stream`): layer_done(head_stage(L))
  // once the output head's gradients are complete (wte's output-projection part, the final
  // LayerNorm), then for l = L-1 .. 0 once that layer's are, and layer_done(kEmbeddingsStage)
  // after the embeddings (wpe, the rows); the stages are ../grad_buckets.h's.
  enum class Grads { Overwrite, Accumulate };
  void backward(cudaStream_t stream, Grads grads, const std::function<void(int layer)>& layer_done);
  EmbeddingRows& embedding_rows() { return embedding_rows_; }
  // The SMs the matmuls enqueued from now on may count on (0: all); see Matmul::set_sm_target.
  void set_matmul_sm_target(int sms) { matmul_.set_sm_target(sms); }

 private:
  GptConfig config_;  // real vocabulary
  ParamLayout layout_;
  int B_, T_;
  Matmul matmul_;
  // cuBLASLt epilogues used where it has an algorithm for them (decided once, at
  // construction): the residual adds and GELU (forward and backward) inside the matmuls,
  // else the separate kernels of kernels.h.
  bool fuse_residual_ = false, fuse_gelu_ = false;
  bool flash_ = false;  // flash attention: lse_ kept per layer instead of att_
  int flash_backward_variant_ = 0;  // train::flash_backward_default_variant(), read once

  // Shapes: L layers, B sequences of T tokens (N = B*T), C channels, NH heads, Vp the padded
  // vocabulary, P = layout_.total() parameters.
  DeviceBuffer<float> master_;     // (P) fp32 weights, layout() order
  DeviceBuffer<float> grads_;      // (P) fp32 gradients, accumulated over micro-batches
  // Where in grads_ the kernels other than the weight matmuls sum their gradients (wpe, the
  // biases, the LayerNorms): zeroed before a Grads::Overwrite backward. (offset, count) in
  // elements, adjacent tensors merged: five spans for GPT-2, 0.7% of the parameters.
  std::vector<std::pair<std::size_t, std::size_t>> summed_grad_spans_;
  EmbeddingRows embedding_rows_;   // wte's token-embedding gradient, one row per distinct token
  DeviceBuffer<bf16> params_;      // (P) bf16 copy of master_, what the kernels read
  DeviceBuffer<int> tokens_;       // (B, T)
  DeviceBuffer<int> targets_;      // (B, T)

  // Activations kept for backward, stacked by layer (forward() says what each holds).
  DeviceBuffer<bf16> encoded_;     // (B, T, C) token + position embedding
  DeviceBuffer<bf16> ln1_;         // (L, B, T, C)
  DeviceBuffer<bf16> qkvr_;        // (L, B, T, 3C) the qkv projection; (L, 3, B, NH, T, HS) on the GEMM path
  DeviceBuffer<bf16> att_;         // (L, B, NH, T, T) softmax; GEMM path only, empty with flash
  DeviceBuffer<bf16> atty_;        // (L, B, T, C) attention output, heads merged
  DeviceBuffer<bf16> res2_;        // (L, B, T, C) residual after attention
  DeviceBuffer<bf16> ln2_;         // (L, B, T, C)
  DeviceBuffer<bf16> fch_;         // (L, B, T, 4C) fc output before GELU
  DeviceBuffer<bf16> fch_gelu_;    // (L, B, T, 4C)
  DeviceBuffer<bf16> res3_;        // (L, B, T, C) residual after the MLP: the layer's output
  DeviceBuffer<bf16> lnf_;         // (B, T, C) final LayerNorm
  DeviceBuffer<bf16> logits_;      // (B, T, Vp); dlogits after forward(dloss != 0)
  DeviceBuffer<float> ln1_mean_;   // (L, B, T)
  DeviceBuffer<float> ln1_rstd_;   // (L, B, T)
  DeviceBuffer<float> ln2_mean_;   // (L, B, T)
  DeviceBuffer<float> ln2_rstd_;   // (L, B, T)
  DeviceBuffer<float> lnf_mean_;   // (B, T)
  DeviceBuffer<float> lnf_rstd_;   // (B, T)
  DeviceBuffer<float> losses_;     // (B, T)
  DeviceBuffer<float> lse_;        // (L, B, NH, T) flash attention's log-sum-exp
  DeviceBuffer<float> delta_;      // (B, NH, T) flash backward's rowsum(dO o O), per layer in turn
  DeviceBuffer<bf16> flash_ds_;    // flash backward's dS^T tiles, the causal half of (B, NH, T, T), per layer in turn
  DeviceBuffer<float> qkv_block_sums_;  // (B * T/64, 3C) dq, dk, dv summed by blocks of 64 positions, where the
                                        // flash backward writes them (train::FlashColumnSums): qkvb's gradient
  // Scratch, reused by every layer.
  DeviceBuffer<bf16> qkv_;         // (B, T, 3C): the GEMM path's q, k, v; dqkv in backward
  DeviceBuffer<bf16> scores_;      // (B, NH, T, T) GEMM path only
  DeviceBuffer<bf16> nc_a_;        // (B, T, C)
  DeviceBuffer<bf16> nc_b_;        // (B, T, C)
  DeviceBuffer<bf16> dres_;        // (B, T, C) d(loss)/d(residual stream)
  DeviceBuffer<bf16> d4c_;         // (B, T, 4C) d(fc output)
  DeviceBuffer<bf16> dqkvr_;       // (B, T, 3C) GEMM path only

  const bf16* p(Param t, int layer = 0) const;
  float* g(Param t, int layer = 0) const;
  // The attention products over B*NH heads (row-major per head, causal chunks: gpt_model.cpp).
  int attention_chunks() const;
  void head_gemm(bool ta, bool tb, int m, int n, int k, const bf16* a, long long lda, long long sa, const bf16* b,
                 long long ldb, long long sb, bf16* d, long long ldd, long long sd, cudaStream_t s);
  void attention_scores(bf16* scores, const bf16* q, const bf16* k, cudaStream_t s);       // q k^T
  void attention_values(bf16* y, const bf16* att, const bf16* v, cudaStream_t s);          // att v
  void attention_backward(const bf16* dy, int layer, cudaStream_t s);  // GEMM path; -> qkv_ holds dqkv
};

}  // namespace gpuaccept::ddp::gpu
