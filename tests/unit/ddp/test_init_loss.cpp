#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "ddp/cpu_reference.h"
#include "train/markov_data.h"
#include "ddp/param_layout.h"

using namespace gpuaccept::ddp;
using namespace gpuaccept::train;

TEST_CASE("at initialisation the loss is close to ln(vocab)", "[ddp][init]") {
  // At init lnf has weight 1 and bias 0, so |lnf(x)| <= sqrt(C) and every logit is at most
  // M = sqrt(C) * max_v |wte_v| in size; loss - ln(V) = logsumexp(logits) - ln(V) - logit[target]
  // then lies in [-2M, 2M] (~0.3 for the tiny model). Typically it is far smaller: logits of std
  // 0.02*sqrt(C) ~ 0.06 add ~var/2, and with tied embeddings the input token's own logit is
  // ~0.11 (x is mostly wte[token]), adding ~0.11/V: about 0.01-0.03 in all. Margin: 0.05 nats (2% of ln 11).
  const GptConfig config = gpt_tiny;
  const ParamLayout layout(config);
  const MarkovData data(config.vocab, 5);
  const auto batch = data.sample(0, 0, 4, config.max_seq);
  const auto params = init_params(config, 42);
  const double loss = gpt_forward_backward(config, params, batch.tokens, batch.targets, 4, config.max_seq, {});

  const auto wte = layout.slice(std::span<const double>(params), Param::wte);
  double max_row_norm = 0;
  for (int v = 0; v < config.vocab; ++v) {
    double sq = 0;
    for (int c = 0; c < config.channels; ++c) sq += wte[v * config.channels + c] * wte[v * config.channels + c];
    max_row_norm = std::max(max_row_norm, std::sqrt(sq));
  }
  const double bound = 2 * std::sqrt(config.channels) * max_row_norm;
  INFO("loss " << loss << ", ln(V) " << std::log(config.vocab) << ", bound 2M " << bound);
  CHECK(std::abs(loss - std::log(config.vocab)) <= bound);
  CHECK(loss == Approx(std::log(config.vocab)).margin(0.05));
}

TEST_CASE("init_params follows GPT-2's scheme and is deterministic per seed", "[ddp][init]") {
  const GptConfig config{64, 16, 4, 4, 64};
  const ParamLayout layout(config);
  const auto params = init_params(config, 1);
  CHECK(params == init_params(config, 1));
  CHECK(params != init_params(config, 2));
  auto stddev = [&](Param p) {
    const auto xs = layout.slice(std::span<const double>(params), p);
    double sum_sq = 0;
    for (double x : xs) sum_sq += x * x;
    return std::sqrt(sum_sq / static_cast<double>(xs.size()));
  };
  CHECK(stddev(Param::wte) == Approx(0.02).epsilon(0.05));
  CHECK(stddev(Param::qkvw) == Approx(0.02).epsilon(0.05));
  CHECK(stddev(Param::fcprojw) == Approx(0.02 / std::sqrt(2.0 * config.layers)).epsilon(0.05));
  const auto ln2w = layout.slice(std::span<const double>(params), Param::ln2w);
  const auto fcb = layout.slice(std::span<const double>(params), Param::fcb);
  CHECK(std::all_of(ln2w.begin(), ln2w.end(), [](double x) { return x == 1.0; }));
  CHECK(std::all_of(fcb.begin(), fcb.end(), [](double x) { return x == 0.0; }));
}

TEST_CASE("gpt_forward_backward refuses inputs that do not fit the config", "[ddp][init]") {
  const GptConfig config = gpt_tiny;
  const auto params = init_params(config, 1);
  const std::vector<int> ok(8, 1), bad_id = {1, 2, 11, 0, 0, 0, 0, 0};
  CHECK_THROWS_AS(gpt_forward_backward(config, params, ok, ok, 1, 9, {}), std::invalid_argument);  // T > max_seq
  CHECK_THROWS_AS(gpt_forward_backward(config, params, ok, ok, 2, 8, {}), std::invalid_argument);  // size != B*T
  CHECK_THROWS_WITH(gpt_forward_backward(config, params, bad_id, ok, 1, 8, {}), Catch::Contains("token id 11"));
  std::vector<double> short_grads(3);
  CHECK_THROWS_AS(gpt_forward_backward(config, params, ok, ok, 1, 8, short_grads), std::invalid_argument);
}
