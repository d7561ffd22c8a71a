#include "ddp/gpt_config.h"

#include <stdexcept>
#include <utility>

namespace gpuaccept::ddp {

namespace {
const std::pair<const char*, GptConfig> kPresets[] = {
    {"tiny", gpt_tiny},           {"gpt2_124m", gpt2_124m},   {"gpt2_350m", gpt2_350m},
    {"gpt2_774m", gpt2_774m},     {"gpt2_1558m", gpt2_1558m},
};
}  // namespace

GptConfig preset_by_name(const std::string& name) {
  for (const auto& [preset, config] : kPresets)
    if (name == preset) return config;
  std::string known;
  for (const auto& [preset, config] : kPresets) known += (known.empty() ? "" : ", ") + std::string(preset);
  throw std::invalid_argument("unknown GPT preset '" + name + "' (known: " + known + ")");
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& [preset, config] : kPresets) names.emplace_back(preset);
  return names;
}

void validate(const GptConfig& c) {
  if (c.vocab <= 0 || c.max_seq <= 0 || c.layers <= 0 || c.heads <= 0 || c.channels <= 0)
    throw std::invalid_argument("GPT config: vocab, max_seq, layers, heads and channels must all be positive");
  if (c.channels % c.heads != 0)
    throw std::invalid_argument("GPT config: channels (" + std::to_string(c.channels) +
                                ") is not a multiple of heads (" + std::to_string(c.heads) + ")");
}

std::uint64_t parameter_count(const GptConfig& c) {
  const std::uint64_t V = c.vocab, maxT = c.max_seq, L = c.layers, C = c.channels;
  // Per block: ln1 (2C), qkv (3C*C + 3C), attention projection (C*C + C), ln2 (2C),
  // MLP up (4C*C + 4C) and down (4C*C + C) = 12C^2 + 13C.
  const std::uint64_t per_layer = 12 * C * C + 13 * C;
  return V * C + maxT * C + L * per_layer + 2 * C;
}

// Source: PaLM (Chowdhery et al. 2022, arXiv:2204.02311), Appendix B: 6N + 12*L*H*Q*T, with
// N the parameters (each does a multiply-add forward and two backward: 6 FLOPs per token) and
// 12LHQT the attention score and value matmuls (Q head dim, T sequence length). nanoGPT's
// estimate_mfu uses the same; llm.c uses 6*L*C*T, half of it, counting only the causal
// (lower-triangular) part. N includes wte: tied, it is the classifier matmul too.
std::uint64_t training_flops_per_token(const GptConfig& c, int seq_len) {
  const std::uint64_t L = c.layers, H = c.heads, Q = c.channels / c.heads, T = seq_len;
  return 6 * parameter_count(c) + 12 * L * H * Q * T;
}

}  // namespace gpuaccept::ddp
