#include "train/markov_data.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace gpuaccept::train {

namespace {
// mt19937_64 and seed_seq are specified exactly by the standard (the std distributions are
// not), so the chain and every batch are the same on every platform.
std::mt19937_64 make_rng(std::initializer_list<std::uint64_t> words) {
  std::vector<std::uint32_t> halves;
  for (auto w : words) {
    halves.push_back(static_cast<std::uint32_t>(w));
    halves.push_back(static_cast<std::uint32_t>(w >> 32));
  }
  std::seed_seq seq(halves.begin(), halves.end());
  return std::mt19937_64(seq);
}
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Tags keep the chain's random stream apart from the batches' streams.
constexpr std::uint64_t kChainTag = 1, kSampleTag = 2;
}  // namespace

MarkovData::MarkovData(int vocab, std::uint64_t seed, int successors) : vocab_(vocab), seed_(seed) {
  if (vocab < 2 || successors < 1)
    throw std::invalid_argument("MarkovData: need vocab >= 2 and successors >= 1, got vocab " +
                                std::to_string(vocab) + ", successors " + std::to_string(successors));
  const int k = std::min(successors, vocab);
  auto rng = make_rng({kChainTag, seed});
  rows_.resize(vocab);
  for (int i = 0; i < vocab; ++i) {
    // i+1 (mod vocab) is always a successor: the cycle through every token makes the chain
    // irreducible, so its stationary distribution is unique and covers the whole vocabulary.
    std::vector<int> next = {(i + 1) % vocab};
    while (static_cast<int>(next.size()) < k) {
      const int j = static_cast<int>(rng() % static_cast<std::uint64_t>(vocab));
      if (std::find(next.begin(), next.end(), j) == next.end()) next.push_back(j);
    }
    // Exponential weights, normalised: a uniformly random point of the probability simplex;
    // + 1e-3 keeps every listed successor possible (a zero would make log(P) -inf).
    std::vector<double> w(k);
    double sum = 0;
    for (auto& x : w) sum += (x = -std::log(1.0 - uniform01(rng)) + 1e-3);
    for (int s = 0; s < k; ++s) rows_[i].push_back({next[s], w[s] / sum});
  }

  // Stationary distribution pi = pi P by power iteration on the lazy chain (I + P)/2: it has
  // the same fixed point, and being aperiodic it converges for any irreducible chain (plain
  // P could oscillate if the chain were periodic). Start uniform, stop when an iteration
  // moves pi by less than 1e-14 in L1.
  std::vector<double> pi(vocab, 1.0 / vocab), next_pi(vocab);
  for (int iter = 0; iter < 100000; ++iter) {
    for (int i = 0; i < vocab; ++i) next_pi[i] = 0.5 * pi[i];
    for (int i = 0; i < vocab; ++i)
      for (const auto& s : rows_[i]) next_pi[s.token] += 0.5 * pi[i] * s.probability;
    double change = 0;
    for (int i = 0; i < vocab; ++i) change += std::abs(next_pi[i] - pi[i]);
    pi.swap(next_pi);
    if (change < 1e-14) break;
  }
  stationary_ = pi;

  // Entropy rate: the entropy of the next token given the current one, averaged over pi.
  for (int i = 0; i < vocab; ++i)
    for (const auto& s : rows_[i]) entropy_rate_ -= pi[i] * s.probability * std::log(s.probability);

  stationary_cdf_.resize(vocab);
  double cumulative = 0;
  for (int i = 0; i < vocab; ++i) stationary_cdf_[i] = (cumulative += pi[i]);
}

int MarkovData::next_token(int from, double u) const {
  for (const auto& s : rows_[from]) {
    if (u < s.probability) return s.token;
    u -= s.probability;
  }
  return rows_[from].back().token;  // u landed in the rounding gap at the top
}

TokenBatch MarkovData::sample(int rank, std::uint64_t step, int B, int T) const {
  if (rank < 0 || B <= 0 || T <= 0)
    throw std::invalid_argument("MarkovData::sample: need rank >= 0, B > 0 and T > 0");
  auto rng = make_rng({kSampleTag, seed_, static_cast<std::uint64_t>(rank), step});
  TokenBatch batch{.tokens = std::vector<int>(static_cast<std::size_t>(B) * T),
                   .targets = std::vector<int>(static_cast<std::size_t>(B) * T)};
  for (int b = 0; b < B; ++b) {
    const double u = uniform01(rng) * stationary_cdf_.back();
    int token = static_cast<int>(std::upper_bound(stationary_cdf_.begin(), stationary_cdf_.end(), u) -
                                 stationary_cdf_.begin());
    token = std::min(token, vocab_ - 1);
    for (int t = 0; t < T; ++t) {
      const std::size_t n = static_cast<std::size_t>(b) * T + t;
      batch.tokens[n] = token;
      token = next_token(token, uniform01(rng));
      batch.targets[n] = token;
    }
  }
  return batch;
}

}  // namespace gpuaccept::train
