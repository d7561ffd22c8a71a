// The shape of a Qwen2 decoder-only model (Hugging Face's Qwen2Config) and the LoRA
// adapters on it: the sizes every other part of the fsdp-lora phase is planned from.
// Qwen2: token embedding -> L x [RMSNorm -> GQA attention with RoPE (q/k/v with bias,
// o without) -> residual -> RMSNorm -> SwiGLU MLP -> residual] -> RMSNorm -> LM head.
// Embedding and head are untied (Qwen2-7B's own setting).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuaccept::fsdp {

struct QwenConfig {
  int vocab;         // V: token ids 0 .. vocab-1
  int hidden;        // C: width of the residual stream
  int layers;        // L: decoder layers
  int heads;         // NH: query heads
  int kv_heads;      // NKV: key/value heads; heads is a multiple of kv_heads (grouped-query attention)
  int head_dim;      // HD: channels per head (heads * head_dim need not equal hidden, but does in Qwen2)
  int intermediate;  // I: width of the SwiGLU MLP
  int max_seq;       // longest sequence the preset is meant for (RoPE needs no table size)
  double rms_eps;    // RMSNorm epsilon
  double rope_theta; // RoPE base
};

// Qwen2-7B (config.json of Qwen/Qwen2-7B).
inline constexpr QwenConfig qwen2_7b{152064, 3584, 28, 28, 4, 128, 18944, 32768, 1e-6, 1e6};
// Qwen2-0.5B's shape with its embedding untied (the real model ties it): ~0.63B parameters,
// for quick runs.
inline constexpr QwenConfig qwen2_0_5b{151936, 896, 24, 14, 2, 64, 4864, 32768, 1e-6, 1e6};
// Small enough that finite differences over every LoRA parameter take milliseconds in float64,
// and still with grouped heads (4 query heads share 2 key/value heads).
inline constexpr QwenConfig qwen_tiny{13, 16, 2, 4, 2, 4, 24, 16, 1e-6, 1e4};

// "tiny", "qwen2_0_5b", "qwen2_7b"; throws std::invalid_argument naming an unknown one.
QwenConfig qwen_preset_by_name(const std::string& name);
std::vector<std::string> qwen_preset_names();

// Throws std::invalid_argument naming the field when a size is not positive, heads is not a
// multiple of kv_heads, head_dim is odd (RoPE rotates pairs) or eps/theta are not positive.
void validate(const QwenConfig& c);

// The seven projections of a decoder layer, in the order they run.
enum class Projection { q, k, v, o, gate, up, down };
inline constexpr Projection kAllProjections[] = {Projection::q,    Projection::k,  Projection::v,   Projection::o,
                                                 Projection::gate, Projection::up, Projection::down};
const char* projection_name(Projection p);  // "q_proj", ..., "down_proj" (Hugging Face's names)
// A projection computes y (.., out) = x (.., in) W^T (+ bias): W is (out, in) as Hugging Face stores it.
int projection_in(const QwenConfig& c, Projection p);
int projection_out(const QwenConfig& c, Projection p);
bool projection_has_bias(Projection p);  // q, k and v

struct LoraConfig {
  int rank = 64;          // r
  double alpha = 128;     // the update is (alpha / r) * B A
  double dropout = 0.05;  // on the adapter's input only, as PEFT
  std::vector<Projection> targets{Projection::q, Projection::k, Projection::v, Projection::o};
  double scale() const { return alpha / rank; }
};
// "qkvo" (the default) or "all" (the seven projections); throws std::invalid_argument otherwise.
std::vector<Projection> lora_targets_by_name(const std::string& name);

// Adapters whose projections read the same input draw their dropout masks in one pass over it
// (q, k and v read the first norm's output; gate and up the second's; o and down read their
// own), into one (N, in) copy each: the widest group's columns, summed over its adapters (10,752
// for q, k and v at hidden 3584), or the widest single adapter input if that is more.
int lora_dropout_scratch_columns(const QwenConfig& c, const LoraConfig& lora);

// Every number of the frozen base: embedding, layers, final norm, head.
std::uint64_t base_parameter_count(const QwenConfig& c);
std::uint64_t layer_parameter_count(const QwenConfig& c);  // one decoder layer's base weights
// The trainable LoRA numbers: per target, A (r, in) and B (out, r), in every layer.
std::uint64_t lora_parameter_count(const QwenConfig& c, const LoraConfig& lora);

// With per-layer activation recompute, what forward keeps of each layer beside its input, so
// that backward rebuilds less (gpu/qwen_model.h, Memory; fsdp_lora.recompute_keep):
//   input            nothing more: the whole layer is run again (PyTorch's per-layer checkpointing)
//   attention        the attention's output and log-sum-exp: all but the attention is run again
//   attention_block  also q, k, v and the residual after attention: only the MLP block (and the
//                    first norm, for the q/k/v adapters' input) is run again
enum class RecomputeKeep { input, attention, attention_block };
// "input", "attention", "attention_block"; throws std::invalid_argument naming an unknown one.
RecomputeKeep recompute_keep_by_name(const std::string& name);
const char* recompute_keep_name(RecomputeKeep keep);

// FLOPs of one training step per token at sequence length seq_len, as the GPU runs them. The
// base is frozen, so its matmuls (the seven projections of every layer, and the head; the
// embedding is a lookup) run forward (2 per weight) and backward for the input gradient only (2
// more); with recompute, the projections the rebuilt layer runs again add 2 per weight: q, k, v,
// o, gate and up (down's output, the next layer's input, is kept), or with `attention_block`
// gate and up only. Attention's score and value matmuls add 4 x L x NH x HD x T forward, twice
// that backward, and once more when recomputed (`input` only). LoRA adds 6 x its parameters
// (forward, input and weight gradients) and about 2 more when recomputed.
// The anchor (torch_fsdp_lora_qwen2_7b.py) counts (4 or 6) x all base parameters + 12 L C T;
// both figures are recorded so the two can be compared.
std::uint64_t training_flops_per_token(const QwenConfig& c, const LoraConfig& lora, int seq_len, bool recompute,
                                       RecomputeKeep keep);
// The count above in words, for the records: "(4 x base matmul weights + 2 x ... ) per token".
std::string training_flops_formula(bool recompute, RecomputeKeep keep);
std::uint64_t anchor_flops_per_token(const QwenConfig& c, int seq_len, bool recompute);

}  // namespace gpuaccept::fsdp
