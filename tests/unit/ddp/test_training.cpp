// The reference can learn: Adam on the tiny model over Markov data brings the loss from
// ln(vocab) most of the way down to the chain's entropy rate, the floor no model can beat.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "ddp/cpu_reference.h"
#include "train/markov_data.h"

using namespace gpuaccept::ddp;
using namespace gpuaccept::train;

namespace {
// Adam (Kingma & Ba), no weight decay: m and v are running means of g and g^2, bias-corrected.
struct Adam {
  double lr, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  std::vector<double> m{}, v{};
  int t = 0;
  void step(std::vector<double>& params, const std::vector<double>& grads) {
    if (m.empty()) m.assign(params.size(), 0.0), v.assign(params.size(), 0.0);
    ++t;
    for (std::size_t i = 0; i < params.size(); ++i) {
      m[i] = beta1 * m[i] + (1 - beta1) * grads[i];
      v[i] = beta2 * v[i] + (1 - beta2) * grads[i] * grads[i];
      const double m_hat = m[i] / (1 - std::pow(beta1, t)), v_hat = v[i] / (1 - std::pow(beta2, t));
      params[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};
}  // namespace

TEST_CASE("Adam on Markov data lowers the loss toward the entropy rate", "[ddp][training]") {
  const GptConfig config = gpt_tiny;
  const int B = 8, T = config.max_seq, steps = 60;
  const MarkovData data(config.vocab, 2024, 3);
  // A held-out batch from a rank no training step uses; 2048 positions put the noise of its
  // mean loss at ~0.02 nats, so it may dip that far below the floor but no further.
  const auto eval = data.sample(99, 0, 256, T);
  auto eval_loss = [&](const std::vector<double>& p) {
    return gpt_forward_backward(config, p, eval.tokens, eval.targets, 256, T, {});
  };

  auto params = init_params(config, 1);
  std::vector<double> grads(params.size());
  Adam adam{.lr = 3e-2};
  const double floor = data.entropy_rate(), start = eval_loss(params);
  for (int step = 0; step < steps; ++step) {
    const auto batch = data.sample(0, step, B, T);
    gpt_forward_backward(config, params, batch.tokens, batch.targets, B, T, grads);
    adam.step(params, grads);
  }
  const double end = eval_loss(params);
  INFO("ln(V) " << std::log(config.vocab) << ", loss at init " << start << ", after " << steps << " steps " << end
                << ", entropy rate " << floor);
  CHECK(start - floor > 0.5);                  // the task leaves something to learn
  CHECK(end - floor < 0.3 * (start - floor));  // most of the gap closed (~80% at the time of writing)
  CHECK(end > floor - 0.05);                   // no model beats the floor beyond noise
}
