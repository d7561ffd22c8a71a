#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "train/markov_data.h"

using namespace gpuaccept::train;

TEST_CASE("Markov batches are deterministic per (seed, rank, step) and differ otherwise", "[train][markov]") {
  const MarkovData data(11, 9), same_seed(11, 9), other_seed(11, 10);
  const auto a = data.sample(0, 5, 4, 16);
  CHECK(a.tokens == same_seed.sample(0, 5, 4, 16).tokens);
  CHECK(a.targets == same_seed.sample(0, 5, 4, 16).targets);
  CHECK(a.tokens != data.sample(1, 5, 4, 16).tokens);  // each rank its own shard
  CHECK(a.tokens != data.sample(0, 6, 4, 16).tokens);
  CHECK(a.tokens != other_seed.sample(0, 5, 4, 16).tokens);
}

TEST_CASE("Markov targets are the next token of the walk", "[train][markov]") {
  const MarkovData data(11, 9);
  const int B = 3, T = 10;
  const auto batch = data.sample(2, 1, B, T);
  REQUIRE(batch.tokens.size() == static_cast<std::size_t>(B * T));
  for (int b = 0; b < B; ++b)
    for (int t = 0; t + 1 < T; ++t) CHECK(batch.targets[b * T + t] == batch.tokens[b * T + t + 1]);
}

TEST_CASE("the empirical conditional entropy of a long sample matches entropy_rate()", "[train][markov]") {
  const int V = 11, successors = 4;
  const MarkovData data(V, 123, successors);
  const double pi_sum = std::accumulate(data.stationary().begin(), data.stationary().end(), 0.0);
  CHECK(pi_sum == Approx(1.0).epsilon(1e-12));
  CHECK(data.entropy_rate() > 0);
  CHECK(data.entropy_rate() < std::log(successors));  // at most uniform over the successors

  // H_emp = -sum_ij N_ij/N log(N_ij/N_i) over 1M transitions; its bias is ~(cells - rows)/(2N),
  // ~2e-5 nats here, and its noise ~1e-3, both far inside the 2% allowed.
  std::vector<double> pair_counts(V * V, 0.0), from_counts(V, 0.0);
  double total = 0;
  for (int step = 0; step < 1000; ++step) {
    const auto batch = data.sample(0, step, 16, 64);
    for (std::size_t n = 0; n < batch.tokens.size(); ++n) {
      pair_counts[batch.tokens[n] * V + batch.targets[n]] += 1;
      from_counts[batch.tokens[n]] += 1;
      total += 1;
    }
  }
  double empirical = 0;
  for (int i = 0; i < V; ++i)
    for (int j = 0; j < V; ++j)
      if (pair_counts[i * V + j] > 0)
        empirical -= pair_counts[i * V + j] / total * std::log(pair_counts[i * V + j] / from_counts[i]);
  CHECK(empirical == Approx(data.entropy_rate()).epsilon(0.02));
  // Tokens appear with their stationary frequencies (each sequence starts from pi).
  for (int i = 0; i < V; ++i) CHECK(from_counts[i] / total == Approx(data.stationary()[i]).margin(0.01));
}

TEST_CASE("a GPT-2-sized vocabulary builds a chain quickly", "[train][markov]") {
  const MarkovData data(50257, 1);
  const double pi_sum = std::accumulate(data.stationary().begin(), data.stationary().end(), 0.0);
  CHECK(pi_sum == Approx(1.0).epsilon(1e-9));
  const auto batch = data.sample(3, 7, 2, 1024);
  CHECK(std::all_of(batch.tokens.begin(), batch.tokens.end(), [](int id) { return id >= 0 && id < 50257; }));
}

TEST_CASE("MarkovData refuses a vocabulary it cannot build a chain over", "[train][markov]") {
  CHECK_THROWS_AS(MarkovData(1, 0), std::invalid_argument);
  CHECK_THROWS_AS(MarkovData(11, 0).sample(-1, 0, 1, 1), std::invalid_argument);
}
