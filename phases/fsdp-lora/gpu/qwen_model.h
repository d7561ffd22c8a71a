// Qwen2 with LoRA adapters on one GPU: the forward and backward passes written out layer by
// layer, with the same math as ../cpu_reference.cpp (which the test program compares them
// against: tests/gpu/fsdp_model_test.cu). The frozen base is read, never owned: FSDP hands the
// model each gathered layer just in time (WeightSource below); single-GPU callers set pointers.
//
// Precision: frozen weights, activations and their gradients bf16, except the two gradients
// that sum several paths, which are fp32: the residual stream's (every layer adds its two
// branches to it) and a normed input's (q, k and v, or gate and up, and their adapters, each
// add theirs). LoRA: fp32 master, a bf16 copy the matmuls read, fp32 gradients. Matmuls
// accumulate in fp32 (cuBLASLt); logits are fp32, one chunk of rows at a time.
//
// Memory. With per-layer activation recompute (ModelOptions::recompute, the phase's default)
// forward keeps each layer's input h (L+1, B, T, C) bf16 (slot L: the final norm's input) and,
// as ModelOptions::recompute_keep says (qwen_config.h's RecomputeKeep), more of each layer;
// backward first rebuilds the rest of a layer's forward from what was kept into one layer's
// activation set, shared by all layers, then runs that layer's backward:
//   input            the whole layer again
//   attention        (the default) the attention's output y (L, B, T, NH*HD) bf16 and its
//                    log-sum-exp (L, B, NH, T) fp32 kept, so all but the attention again: the
//                    attention is the costliest part to recompute per byte kept (0.8 ms of an
//                    H100 a layer at Qwen2-7B's B 2, T 4096 for 59 MB; docs/performance-history.md)
//   attention_block  also q, k, v (after RoPE) and h_mid kept (L sets each): the first norm, the
//                    attention adapters' rank-r products and the MLP block again
// Without recompute forward keeps one activation set per layer (what backward reads: ../memory_plan.cpp
// lists it) and backward reads it: a quarter fewer matmul FLOPs, ~0.9 GiB more per layer at
// Qwen2-7B's B 2, T 4096.
// Dropout masks are redrawn from their key, never stored. The two give the same bits: the
// recompute repeats forward's kernels on the same inputs.
//
// Use (one micro-batch; the trainer owns streams, the optimizer and communication):
//   QwenLoraModel model(config, lora, B, T);
//   model.set_layer_weights(l, gathered_layer_l) ...   (or set_weight_source(&fsdp_source))
//   model.set_embedding(embed); model.set_head(head); model.set_final_norm(norm);
//   model.upload_lora(flat_fp32, stream);               (layout: lora_layout())
//   model.zero_lora_grads(stream);
//   float loss = model.forward_backward(tokens, targets, step, seed, stream);
//   // lora_grads() now holds d(loss)/d(every A and B), fp32, in lora_layout()
//   adamw on lora_master() / lora_params() with lora_grads() (train/optimizer_kernels.h fits)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cuda/cuda_handles.h"
#include "fsdp-lora/gpu/attention.h"
#include "fsdp-lora/gpu/gemm.h"
#include "fsdp-lora/gpu/kernels.h"
#include "fsdp-lora/gpu/lora_linear.h"
#include "fsdp-lora/qwen_config.h"
#include "fsdp-lora/shard_plan.h"

namespace gpuaccept::fsdp::gpu {

// Device pointers to one decoder layer's frozen tensors inside a gathered flat layer laid out
// as LayerLayout (shard_plan.h) says.
struct LayerWeights {
  const bf16 *w_in, *wq, *bq, *wk, *bk, *wv, *bv, *wo, *w_post, *wg, *wu, *wd;
  static LayerWeights from_flat(const LayerLayout& layout, const bf16* flat);
  FrozenLinear projection(const QwenConfig& c, Projection p) const;
};

enum class WeightKind { embedding, layer, head };

// How the model gets the frozen weights it is about to read. For each use it calls
// acquire(kind, layer, stream), enqueues every read of the returned pointer on `stream`, then
// calls release(kind, layer, stream): the buffer may be reused once the work enqueued on
// `stream` until then has run (record an event there). acquire's pointer must be readable by
// work enqueued on `stream` after the call (make `stream` wait on the gather's event).
// embedding and head are (V, C) row-major, layer a flat layer (LayerLayout); `layer` is the
// decoder layer (0 for embedding and head). The order of calls is fixed, so a prefetcher can
// gather the next one while the current one computes:
//   forward_backward: embedding; layer 0, 1, .., L-1; head; layer L-1, .., 0
//                     (the second visit recomputes the layer, then runs its backward)
//   forward_only:     embedding; layer 0, 1, .., L-1; head
class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual const bf16* acquire(WeightKind kind, int layer, cudaStream_t stream) = 0;
  virtual void release(WeightKind kind, int layer, cudaStream_t stream) {
    (void)kind, (void)layer, (void)stream;
  }
};

struct ModelOptions {
  bool naive_gemm = false;       // every matmul on naive_gemm (kernels.h): tests only, slow
  bool matmul_autotune = true;   // time cuBLASLt's candidates per shape (src/train/matmul.h)
  int logits_chunk = 1024;       // rows of (rows, V) fp32 logits at a time (memory_plan.h's kLogitsChunkTokens)
  bool recompute = true;         // false: every layer's activations kept from forward (see Memory above)
  RecomputeKeep recompute_keep = RecomputeKeep::attention_block;  // with recompute: what is kept (Memory above)
};

class QwenLoraModel {
 public:
  // B sequences of T tokens per micro-batch. Throws std::invalid_argument on a config that does
  // not validate, or B, T, the LoRA rank or logits_chunk < 1.
  QwenLoraModel(const QwenConfig& config, const LoraConfig& lora, int B, int T, ModelOptions options = {});
  ~QwenLoraModel();
  QwenLoraModel(const QwenLoraModel&) = delete;
  QwenLoraModel& operator=(const QwenLoraModel&) = delete;

  const QwenConfig& config() const { return config_; }
  const LoraConfig& lora() const { return lora_; }
  int B() const { return B_; }
  int T() const { return T_; }

  // ---- frozen weights (device pointers, bf16; the model never frees them)
  // Single-GPU use: every layer resident. Each pointer is a flat layer (LayerLayout), 16-byte
  // aligned (LayerLayout's tensors then are 128-byte aligned).
  void set_layer_weights(int layer, const bf16* flat_layer);
  void set_embedding(const bf16* embed);  // (V, C)
  void set_head(const bf16* head);        // (V, C), untied
  // FSDP: layers, embedding and head from `source` instead (nullptr: back to the pointers set
  // above). The source must outlive its use.
  void set_weight_source(WeightSource* source);
  void set_final_norm(const bf16* w_final);  // (C), always set directly (replicated)

  // ---- LoRA (one flat layout for master, bf16 copy and gradients)
  const LoraLayout& lora_layout() const { return lora_layout_; }
  float* lora_master() const { return master_.get(); }  // fp32, lora_layout().total()
  bf16* lora_params() const { return params_.get(); }   // bf16 copy the matmuls read
  float* lora_grads() const { return grads_.get(); }    // fp32, accumulated by forward_backward
  // Host fp32 values in lora_layout() into the master, and the bf16 copy refreshed.
  void upload_lora(std::span<const float> flat, cudaStream_t stream);
  void refresh_lora_params(cudaStream_t stream);  // bf16 copy = master (after an optimizer that does not)
  void zero_lora_grads(cudaStream_t stream);
  std::vector<float> download_lora_grads(cudaStream_t stream) const;  // synchronizes

  // ---- the passes. tokens and targets are host (B, T) row-major ids in [0, V) (checked:
  // std::invalid_argument otherwise).
  // One micro-batch: forward with LoRA dropout keyed by (seed, step, layer, Projection index)
  // (DropoutKey: step must differ for every micro-batch that needs a fresh mask), the mean
  // cross-entropy, and backward: ADDS d(loss_scale * loss)/d(A, B) of every adapter into
  // lora_grads(). Returns the mean loss over the B*T positions (unscaled); synchronizes
  // `stream` to read it.
  float forward_backward(std::span<const int> tokens, std::span<const int> targets, std::uint64_t step,
                         std::uint64_t seed, cudaStream_t stream, float loss_scale = 1.0f);
  // The same without reading the loss: only enqueues on `stream` (never waits for it), so a
  // trainer can bound its waits itself (RankRuntime); the per-position losses are in losses()
  // once the stream gets there. layer_done(l), when set, is called (on this thread, at enqueue
  // time) once layer l's backward is enqueued on `stream`: its adapters' gradients are final
  // for this micro-batch when `stream` gets there (the gradient buckets' cue).
  void enqueue_forward_backward(std::span<const int> tokens, std::span<const int> targets, std::uint64_t step,
                                std::uint64_t seed, cudaStream_t stream, float loss_scale = 1.0f,
                                const std::function<void(int layer)>& layer_done = {});
  // Evaluation: the mean loss without dropout and without backward; synchronizes `stream`.
  float forward_only(std::span<const int> tokens, std::span<const int> targets, cudaStream_t stream);
  // The per-position losses of the last pass, (B*T) fp32 on the device.
  const float* losses() const { return losses_.get(); }
  // After forward_backward: d(loss_scale * loss)/d(embed[tokens]) (B*T, C) fp32 on the device,
  // the gradient that leaves the first layer (all paths included); for tests.
  const float* embedded_grad() const { return dres_.get(); }

  std::size_t device_bytes() const;
  const char* attention_name() const { return attention_->name(); }
  std::string attention_description() const { return attention_->describe(); }
  long long naive_gemm_calls() const { return gemm_.naive_calls(); }

 private:
  enum class Pass {
    train,      // forward of forward_backward: dropout on, every output
    recompute,  // the same again before backward, without the down projection's output (h_out)
    eval,       // forward_only: no dropout
  };
  class ResidentWeights;

  void upload_tokens(std::span<const int> tokens, std::span<const int> targets, cudaStream_t stream);
  void embed(cudaStream_t stream);
  // h_out = layer(h_in); one layer's activations land in the scratch set below.
  void layer_forward(int l, const LayerWeights& w, Pass pass, const DropoutKey& key, const bf16* h_in, bf16* h_out,
                     cudaStream_t stream);
  // dres_ holds d(h_out) on entry, d(h_in) on return; needs layer_forward(recompute) just before.
  void layer_backward(int l, const LayerWeights& w, const DropoutKey& key, const bf16* h_in, cudaStream_t stream);
  // Final norm, logits and cross-entropy by row chunks; with backward, d(loss)/d(h_L) into dres_.
  void head(bool backward, float dloss, cudaStream_t stream);
  float mean_loss(cudaStream_t stream);
  // Device pointers to layer l's activation set (the buffers below, at its slot).
  struct LayerActivations {
    bf16* x1;
    float* rstd1;
    bf16 *q, *k, *v, *y, *h_mid, *x2;
    float* rstd2;
    bf16 *gate, *up, *a, *z;
  };
  // Layer l's set: slot l without recompute, the one shared set (slot 0) with it.
  int slot(int l) const { return options_.recompute ? 0 : l; }
  // Whether forward keeps each layer's attention output and state, and its q, k, v and h_mid
  // (Memory above): all of it without recompute, with it as recompute_keep says.
  bool keeps_attention() const { return !options_.recompute || options_.recompute_keep != RecomputeKeep::input; }
  bool keeps_attention_block() const {
    return !options_.recompute || options_.recompute_keep == RecomputeKeep::attention_block;
  }
  // Layer l's attention slot and attention output y: l where kept, else the shared 0; the same
  // for its q, k, v and h_mid.
  int attention_slot(int l) const { return keeps_attention() ? l : 0; }
  int attention_block_slot(int l) const { return keeps_attention_block() ? l : 0; }
  LayerActivations activations(int l) const;
  // The adapter on projection p of layer l (nullptr when p is not a target).
  const Adapter* adapter(int l, Projection p, Pass pass, const DropoutKey& key);
  const bf16* residual(int l) const;  // h_l (N, C): slot l of residual_

  QwenConfig config_;
  LoraConfig lora_;
  int B_, T_, N_;
  ModelOptions options_;
  LayerLayout layer_layout_;
  LoraLayout lora_layout_;
  Gemm gemm_;
  std::unique_ptr<Attention> attention_;
  std::unique_ptr<LoraLinear> lora_linear_;
  std::unique_ptr<ResidentWeights> resident_;
  WeightSource* source_;
  const bf16* final_norm_ = nullptr;
  Adapter adapters_[std::size(kAllProjections)]{};  // the layer computing's adapters (adapter())

  // LoRA, lora_layout()
  DeviceBuffer<float> master_, grads_;
  DeviceBuffer<bf16> params_;
  // Inputs
  DeviceBuffer<int> tokens_, targets_;  // (B, T)
  PinnedBuffer<float> losses_host_;     // (B*T)

  // Kept from forward to backward
  DeviceBuffer<bf16> residual_;  // (L+1, B, T, C): each layer's input; slot L the final norm's

  // The layers' activation sets (Q = NH*HD, KV = NKV*HD). S sets: 1 with recompute (rebuilt
  // before each layer's backward), L without (kept from forward). x1, x2 and a have S sets only
  // where an adapter's backward reads them (q/k/v, gate/up, down); otherwise one, a scratch.
  DeviceBuffer<bf16> x1_;         // (S or 1, B, T, C)  rmsnorm(h) * w_in: q, k, v's input
  DeviceBuffer<float> rstd1_;     // (S, B, T)
  DeviceBuffer<bf16> q_;          // (L or 1, B, T, Q)   after RoPE (L: keeps_attention_block)
  DeviceBuffer<bf16> k_, v_;      // (L or 1, B, T, KV)  k after RoPE
  DeviceBuffer<bf16> y_;          // (L or 1, B, T, Q)   attention output, o's input (L: keeps_attention)
  DeviceBuffer<bf16> h_mid_;      // (L or 1, B, T, C)   h + o (L: keeps_attention_block)
  DeviceBuffer<bf16> x2_;         // (S or 1, B, T, C)  rmsnorm(h_mid) * w_post: gate and up's input
  DeviceBuffer<float> rstd2_;     // (S, B, T)
  DeviceBuffer<bf16> gate_, up_;  // (S, B, T, I)
  DeviceBuffer<bf16> a_;          // (S or 1, B, T, I)  silu(gate) * up: down's input
  DeviceBuffer<bf16> z_;          // (S, 7, B, T, r) per projection: s * dropout(x) A^T (targets only used)
  bool x1_per_slot_ = false, x2_per_slot_ = false, a_per_slot_ = false;

  // Gradients and scratch of the layer computing, and the head
  DeviceBuffer<float> dres_;      // (B, T, C)   d(loss)/d(residual stream), fp32, flowing down
  DeviceBuffer<bf16> dres_bf16_;  // (B, T, C)   its bf16 copy, the matmuls' operand (written with it by
                                  //             every RMSNorm backward)
  DeviceBuffer<float> dxn_;       // (B, T, C)   d(loss)/d(a normed input), fp32 (also d(final norm out))
  DeviceBuffer<bf16> dy_;         // (B, T, Q)   d(attention output)
  DeviceBuffer<bf16> dq_;         // (B, T, Q)
  DeviceBuffer<bf16> dk_, dv_;    // (B, T, KV)
  DeviceBuffer<bf16> dgate_, dup_;  // (B, T, I)  (dgate_ holds d(a) first)
  DeviceBuffer<bf16> xf_;         // (B, T, C)   final norm's output
  DeviceBuffer<float> rstdf_;     // (B, T)
  DeviceBuffer<float> logits_;    // (chunk, V)  fp32
  DeviceBuffer<bf16> dlogits_;    // (chunk, V)
  DeviceBuffer<float> losses_;    // (B, T)
};

}  // namespace gpuaccept::fsdp::gpu
