// The shape of a GPT-2 model (what llm.c calls GPT2Config) and the standard sizes.
// The vocabulary is GPT-2's own 50257 tokens, not llm.c's padded 50304: the parameter
// count is then the one the GPT-2 paper's "124M" rounds (124,439,808).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuaccept::ddp {

struct GptConfig {
  int vocab;     // V: token ids are 0 .. vocab-1
  int max_seq;   // maxT: rows of the position embedding; a sequence may be shorter
  int layers;    // L: transformer blocks
  int heads;     // NH: attention heads; channels must be a multiple of heads
  int channels;  // C: width of the residual stream
};

inline constexpr GptConfig gpt2_124m{50257, 1024, 12, 12, 768};
inline constexpr GptConfig gpt2_350m{50257, 1024, 24, 16, 1024};
inline constexpr GptConfig gpt2_774m{50257, 1024, 36, 20, 1280};
inline constexpr GptConfig gpt2_1558m{50257, 1024, 48, 25, 1600};
// Small enough that finite differences over every parameter take milliseconds.
inline constexpr GptConfig gpt_tiny{11, 8, 2, 2, 8};

// "tiny", "gpt2_124m", "gpt2_350m", "gpt2_774m", "gpt2_1558m"; throws std::invalid_argument naming an unknown one.
GptConfig preset_by_name(const std::string& name);
std::vector<std::string> preset_names();

// Throws std::invalid_argument when a field is not positive or channels % heads != 0.
void validate(const GptConfig& c);

// Every trainable number (embeddings tied: wte is also the output projection).
std::uint64_t parameter_count(const GptConfig& c);

// Training FLOPs (forward + backward) per token at sequence length seq_len.
std::uint64_t training_flops_per_token(const GptConfig& c, int seq_len);

}  // namespace gpuaccept::ddp
