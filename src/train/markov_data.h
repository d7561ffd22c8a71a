// A synthetic next-token task a model can learn, with a known best possible loss: a fixed
// random first-order Markov chain over the vocabulary. Each token has a few successors with
// random probabilities, so the next token is partly predictable from the current one and
// the loss of a perfect model is the chain's entropy rate, well below ln(vocab).
// Every rank draws its own shard: batches depend only on (seed, rank, step), so a run is
// reproducible and ranks never see the same sequences.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuaccept::train {

struct TokenBatch {
  std::vector<int> tokens;   // (B, T) row-major
  std::vector<int> targets;  // (B, T): targets[b,t] = tokens[b,t+1], the last one walked one step further
};

class MarkovData {
 public:
  // successors per token, clamped to vocab; throws std::invalid_argument when vocab < 2 or successors < 1.
  MarkovData(int vocab, std::uint64_t seed, int successors = 4);

  // B sequences of T+1 steps of the chain, each starting from the stationary distribution,
  // so every position has the same statistics and the expected loss floor is entropy_rate().
  TokenBatch sample(int rank, std::uint64_t step, int B, int T) const;

  // H = sum_i pi_i * H(P[i,:]) in nats: the expected cross-entropy of the true next-token
  // distribution, the floor a perfect model's loss reaches.
  double entropy_rate() const { return entropy_rate_; }
  const std::vector<double>& stationary() const { return stationary_; }  // pi, sums to 1
  int vocab() const { return vocab_; }

 private:
  struct Successor {
    int token;
    double probability;
  };
  int next_token(int from, double u) const;  // u uniform in [0, 1)

  int vocab_;
  std::uint64_t seed_;
  std::vector<std::vector<Successor>> rows_;  // rows_[i]: the chain's nonzero P[i,:]
  std::vector<double> stationary_;
  std::vector<double> stationary_cdf_;        // for drawing first tokens
  double entropy_rate_ = 0;
};

}  // namespace gpuaccept::train
