// Where training batches come from: the synthetic Markov task (markov_data.h), whose best
// possible loss is known, or a file of token ids in llm.c's format (a 256 x int32 header:
// magic 20240520, version 1, token count; then uint16 token ids). Batches depend only on
// (shard, step), so a run is reproducible and the equivalence check can replay any rank's
// data on another GPU.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "train/markov_data.h"

namespace gpuaccept::train {

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual TokenBatch sample(int shard, std::uint64_t step, int B, int T) const = 0;
  // The best achievable mean loss, when the data's distribution is known.
  virtual std::optional<double> loss_floor() const = 0;
  virtual std::string describe() const = 0;
};

std::unique_ptr<TokenSource> markov_source(int data_vocab, std::uint64_t seed, int successors);
// Throws InputError naming the file when it is missing, truncated, not in llm.c's format,
// holds a token >= vocab, or is not longer than one sequence of seq_len tokens.
std::unique_ptr<TokenSource> file_source(const std::filesystem::path& path, int vocab, int seq_len);

}  // namespace gpuaccept::train
