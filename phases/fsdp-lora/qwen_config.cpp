#include "fsdp-lora/qwen_config.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace gpuaccept::fsdp {

namespace {
const std::pair<const char*, QwenConfig> kPresets[] = {
    {"tiny", qwen_tiny},
    {"qwen2_0_5b", qwen2_0_5b},
    {"qwen2_7b", qwen2_7b},
};
}  // namespace

QwenConfig qwen_preset_by_name(const std::string& name) {
  for (const auto& [preset, config] : kPresets)
    if (name == preset) return config;
  throw std::invalid_argument(
      fmt::format("unknown Qwen2 preset '{}' (known: {})", name, fmt::join(qwen_preset_names(), ", ")));
}

std::vector<std::string> qwen_preset_names() {
  std::vector<std::string> names;
  for (const auto& [preset, config] : kPresets) names.emplace_back(preset);
  return names;
}

void validate(const QwenConfig& c) {
  const std::pair<const char*, int> sizes[] = {
      {"vocab", c.vocab},       {"hidden", c.hidden},     {"layers", c.layers},
      {"heads", c.heads},       {"kv_heads", c.kv_heads}, {"head_dim", c.head_dim},
      {"intermediate", c.intermediate}, {"max_seq", c.max_seq},
  };
  for (const auto& [field, value] : sizes)
    if (value <= 0) throw std::invalid_argument(fmt::format("Qwen2 config: {} must be positive, got {}", field, value));
  if (c.heads % c.kv_heads != 0)
    throw std::invalid_argument(
        fmt::format("Qwen2 config: heads ({}) is not a multiple of kv_heads ({})", c.heads, c.kv_heads));
  if (c.head_dim % 2 != 0)
    throw std::invalid_argument(
        fmt::format("Qwen2 config: head_dim ({}) is odd; RoPE rotates channel pairs", c.head_dim));
  // Written as !(x > 0) so that NaN is refused too.
  if (!(c.rms_eps > 0)) throw std::invalid_argument(fmt::format("Qwen2 config: rms_eps must be positive, got {}", c.rms_eps));
  if (!(c.rope_theta > 0))
    throw std::invalid_argument(fmt::format("Qwen2 config: rope_theta must be positive, got {}", c.rope_theta));
}

const char* projection_name(Projection p) {
  switch (p) {
    case Projection::q: return "q_proj";
    case Projection::k: return "k_proj";
    case Projection::v: return "v_proj";
    case Projection::o: return "o_proj";
    case Projection::gate: return "gate_proj";
    case Projection::up: return "up_proj";
    case Projection::down: return "down_proj";
  }
  throw std::invalid_argument("projection_name: not a Projection");
}

int lora_dropout_scratch_columns(const QwenConfig& c, const LoraConfig& lora) {
  int columns = 1, attention_inputs = 0, mlp_inputs = 0;
  for (Projection p : lora.targets) {
    columns = std::max(columns, projection_in(c, p));
    if (p == Projection::q || p == Projection::k || p == Projection::v) attention_inputs += projection_in(c, p);
    if (p == Projection::gate || p == Projection::up) mlp_inputs += projection_in(c, p);
  }
  return std::max({columns, attention_inputs, mlp_inputs});
}

int projection_in(const QwenConfig& c, Projection p) {
  switch (p) {
    case Projection::q:
    case Projection::k:
    case Projection::v:
    case Projection::gate:
    case Projection::up: return c.hidden;
    case Projection::o: return c.heads * c.head_dim;
    case Projection::down: return c.intermediate;
  }
  throw std::invalid_argument("projection_in: not a Projection");
}

int projection_out(const QwenConfig& c, Projection p) {
  switch (p) {
    case Projection::q: return c.heads * c.head_dim;
    case Projection::k:
    case Projection::v: return c.kv_heads * c.head_dim;
    case Projection::o:
    case Projection::down: return c.hidden;
    case Projection::gate:
    case Projection::up: return c.intermediate;
  }
  throw std::invalid_argument("projection_out: not a Projection");
}

bool projection_has_bias(Projection p) { return p == Projection::q || p == Projection::k || p == Projection::v; }

std::vector<Projection> lora_targets_by_name(const std::string& name) {
  if (name == "qkvo") return {Projection::q, Projection::k, Projection::v, Projection::o};
  if (name == "all") return {std::begin(kAllProjections), std::end(kAllProjections)};
  throw std::invalid_argument(fmt::format("unknown LoRA targets '{}' (known: qkvo, all)", name));
}

namespace {
// Weights of the seven projections of one layer (no biases): the numbers its matmuls multiply by.
std::uint64_t layer_matmul_weight_count(const QwenConfig& c) {
  std::uint64_t n = 0;
  for (Projection p : kAllProjections)
    n += static_cast<std::uint64_t>(projection_in(c, p)) * static_cast<std::uint64_t>(projection_out(c, p));
  return n;
}
}  // namespace

std::uint64_t layer_parameter_count(const QwenConfig& c) {
  std::uint64_t n = layer_matmul_weight_count(c);
  for (Projection p : kAllProjections)
    if (projection_has_bias(p)) n += static_cast<std::uint64_t>(projection_out(c, p));
  return n + 2 * static_cast<std::uint64_t>(c.hidden);  // input_layernorm and post_attention_layernorm
}

std::uint64_t base_parameter_count(const QwenConfig& c) {
  const std::uint64_t V = c.vocab, C = c.hidden, L = c.layers;
  // Embedding (V, C) + layers + final norm (C) + untied head (V, C).
  return V * C + L * layer_parameter_count(c) + C + V * C;
}

std::uint64_t lora_parameter_count(const QwenConfig& c, const LoraConfig& lora) {
  std::uint64_t per_layer = 0;
  for (Projection p : lora.targets)
    per_layer += static_cast<std::uint64_t>(lora.rank) *
                 (static_cast<std::uint64_t>(projection_in(c, p)) + static_cast<std::uint64_t>(projection_out(c, p)));
  return per_layer * static_cast<std::uint64_t>(c.layers);
}

RecomputeKeep recompute_keep_by_name(const std::string& name) {
  for (RecomputeKeep k : {RecomputeKeep::input, RecomputeKeep::attention, RecomputeKeep::attention_block})
    if (name == recompute_keep_name(k)) return k;
  throw std::invalid_argument(
      fmt::format("unknown recompute_keep '{}' (known: input, attention, attention_block)", name));
}

const char* recompute_keep_name(RecomputeKeep keep) {
  switch (keep) {
    case RecomputeKeep::input: return "input";
    case RecomputeKeep::attention: return "attention";
    case RecomputeKeep::attention_block: return "attention_block";
  }
  return "?";
}

namespace {
// Weights of the projections a recomputed layer runs again (training_flops_per_token).
std::uint64_t recomputed_matmul_weight_count(const QwenConfig& c, RecomputeKeep keep) {
  std::uint64_t n = 0;
  for (Projection p : kAllProjections) {
    const bool mlp_input = p == Projection::gate || p == Projection::up;
    if (p == Projection::down || (keep == RecomputeKeep::attention_block && !mlp_input)) continue;
    n += static_cast<std::uint64_t>(projection_in(c, p)) * static_cast<std::uint64_t>(projection_out(c, p));
  }
  return n;
}
}  // namespace

std::uint64_t training_flops_per_token(const QwenConfig& c, const LoraConfig& lora, int seq_len, bool recompute,
                                       RecomputeKeep keep) {
  const std::uint64_t L = c.layers, NH = c.heads, HD = c.head_dim, T = seq_len;
  // Forward 2, input gradient 2: the seven projections of every layer and the head.
  const std::uint64_t base_matmul = L * layer_matmul_weight_count(c) + static_cast<std::uint64_t>(c.vocab) * c.hidden;
  const std::uint64_t recomputed = recompute ? L * recomputed_matmul_weight_count(c, keep) : 0;
  // Scores (Q K^T) and values (P V): 2 x T x HD each per head per token, forward.
  const std::uint64_t attention_forward = 4 * L * NH * HD * T;
  const std::uint64_t attention_passes = recompute && keep == RecomputeKeep::input ? 4 : 3;
  const std::uint64_t lora_passes = recompute ? 8 : 6;
  return 4 * base_matmul + 2 * recomputed + attention_passes * attention_forward +
         lora_passes * lora_parameter_count(c, lora);
}

std::string training_flops_formula(bool recompute, RecomputeKeep keep) {
  if (!recompute) return "(4 x base matmul weights + 3 x 4 L NH HD T + 6 x LoRA parameters) per token";
  return fmt::format("(4 x base matmul weights + 2 x the {} of every layer + {} x 4 L NH HD T + 8 x LoRA parameters) "
                     "per token",
                     keep == RecomputeKeep::attention_block ? "gate and up weights" : "q, k, v, o, gate and up weights",
                     keep == RecomputeKeep::input ? 4 : 3);
}

std::uint64_t anchor_flops_per_token(const QwenConfig& c, int seq_len, bool recompute) {
  const std::uint64_t L = c.layers, C = c.hidden, T = seq_len;
  return (recompute ? 6 : 4) * base_parameter_count(c) + 12 * L * C * T;
}

}  // namespace gpuaccept::fsdp
