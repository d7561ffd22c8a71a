#include "train/token_source.h"

#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "common/error.h"

namespace gpuaccept::train {

namespace {

class MarkovSource : public TokenSource {
 public:
  MarkovSource(int vocab, std::uint64_t seed, int successors) : data_(vocab, seed, successors) {}
  TokenBatch sample(int shard, std::uint64_t step, int B, int T) const override { return data_.sample(shard, step, B, T); }
  std::optional<double> loss_floor() const override { return data_.entropy_rate(); }
  std::string describe() const override {
    return fmt::format("Markov chain over {} tokens (entropy floor {:.3f} nats)", data_.vocab(), data_.entropy_rate());
  }

 private:
  MarkovData data_;
};

class FileSource : public TokenSource {
 public:
  FileSource(std::filesystem::path path, std::vector<std::uint16_t> tokens)
      : path_(std::move(path)), tokens_(std::move(tokens)) {}
  // Sequence i of the whole run starts at a pseudo-random offset derived from (shard, step, b):
  // shards draw different windows, the same (shard, step) always the same ones.
  TokenBatch sample(int shard, std::uint64_t step, int B, int T) const override {
    TokenBatch b;
    b.tokens.resize(static_cast<std::size_t>(B) * T);
    b.targets.resize(b.tokens.size());
    const std::uint64_t windows = tokens_.size() - static_cast<std::uint64_t>(T);  // starts with T+1 tokens left
    for (int s = 0; s < B; ++s) {
      std::uint64_t h = (static_cast<std::uint64_t>(shard) << 40) ^ (step << 16) ^ static_cast<std::uint64_t>(s);
      h = (h ^ (h >> 33)) * 0xff51afd7ed558ccdULL;  // splitmix-style scramble
      h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ULL;
      const std::uint64_t start = (h ^ (h >> 33)) % windows;
      for (int t = 0; t < T; ++t) {
        b.tokens[static_cast<std::size_t>(s) * T + t] = tokens_[start + t];
        b.targets[static_cast<std::size_t>(s) * T + t] = tokens_[start + t + 1];
      }
    }
    return b;
  }
  std::optional<double> loss_floor() const override { return std::nullopt; }
  std::string describe() const override { return fmt::format("{} ({} tokens)", path_.string(), tokens_.size()); }

 private:
  std::filesystem::path path_;
  std::vector<std::uint16_t> tokens_;
};

}  // namespace

std::unique_ptr<TokenSource> markov_source(int data_vocab, std::uint64_t seed, int successors) {
  return std::make_unique<MarkovSource>(data_vocab, seed, successors);
}

std::unique_ptr<TokenSource> file_source(const std::filesystem::path& path, int vocab, int seq_len) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the token file", path.string()));
  std::int32_t header[256] = {};
  if (!in.read(reinterpret_cast<char*>(header), sizeof header))
    throw InputError(fmt::format("{}: shorter than llm.c's 1024-byte header", path.string()));
  if (header[0] != 20240520 || header[1] != 1)
    throw InputError(fmt::format("{}: not an llm.c token file (magic {}, version {}; want 20240520, 1)", path.string(),
                                 header[0], header[1]));
  if (header[2] <= seq_len)
    throw InputError(fmt::format("{}: holds {} tokens, not more than one sequence of {}", path.string(), header[2], seq_len));
  std::vector<std::uint16_t> tokens(static_cast<std::size_t>(header[2]));
  if (!in.read(reinterpret_cast<char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 2)))
    throw InputError(fmt::format("{}: truncated: the header promises {} tokens", path.string(), header[2]));
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= vocab)
      throw InputError(fmt::format("{}: token {} at position {} is outside the model's vocabulary of {}", path.string(),
                                   tokens[i], i, vocab));
  return std::make_unique<FileSource>(path, std::move(tokens));
}

}  // namespace gpuaccept::train
