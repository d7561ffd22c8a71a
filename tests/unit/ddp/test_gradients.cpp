// The analytic gradient of gpt_forward_backward against central finite differences,
// (L(p + h e_i) - L(p - h e_i)) / 2h, for every parameter tensor.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ddp/cpu_reference.h"
#include "ddp/param_layout.h"

using namespace gpuaccept::ddp;

namespace {
// Tolerance: |analytic - numeric| <= kRel * max(|analytic|, |numeric|) + kAbs.
// kRel = 1e-6: the truncation error of central differences (h^2/6 times the third derivative)
// is ~1e-13 relative at h = 1e-6, far below it, so a wrong term in any backward (a factor off,
// a missing path) fails by orders of magnitude. kAbs: the loss (~2.5) carries rounding of some
// 1e-15 from the thousands of terms summed in a forward pass; divided by 2h that is up to ~1e-9
// of noise in every numeric gradient, which a purely relative bound cannot absorb for small
// entries (the key biases' true gradient is exactly 0: a softmax ignores a shift common to all
// its scores). 1e-8 is ten times that noise and still far below a typical gradient (1e-3..1e-1).
constexpr double kH = 1e-6, kRel = 1e-6, kAbs = 1e-8;
constexpr std::size_t kMaxEntriesPerTensor = 256;  // all of a smaller tensor, else evenly spread

// init_params keeps weights small (std 0.02) and biases 0, where GELU and the softmaxes are
// nearly linear; adding O(0.3) noise puts every nonlinearity in its curved range.
std::vector<double> curved_params(const GptConfig& config) {
  auto params = init_params(config, 7);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> noise(-0.3, 0.3);
  for (double& p : params) p += noise(rng);
  return params;
}
}  // namespace

TEST_CASE("the analytic gradient matches central finite differences on every tensor", "[ddp][gradients]") {
  const GptConfig config = gpt_tiny;
  const int B = 2, T = config.max_seq;
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> token(0, config.vocab - 1);
  std::vector<int> tokens(B * T), targets(B * T);
  for (auto& x : tokens) x = token(rng);
  for (auto& x : targets) x = token(rng);

  auto params = curved_params(config);
  std::vector<double> grads(params.size());
  const double loss = gpt_forward_backward(config, params, tokens, targets, B, T, grads);
  REQUIRE(std::isfinite(loss));
  auto loss_at = [&](std::size_t i, double delta) {
    const double saved = params[i];
    params[i] = saved + delta;
    const double l = gpt_forward_backward(config, params, tokens, targets, B, T, {});
    params[i] = saved;
    return l;
  };

  const ParamLayout layout(config);
  for (const auto& tensor : layout.tensors()) {
    const std::size_t n = std::min(tensor.size, kMaxEntriesPerTensor);
    int bad = 0;
    double worst = 0;  // error / allowed
    std::string first_bad;
    for (std::size_t s = 0; s < n; ++s) {
      const std::size_t i = tensor.offset + s * tensor.size / n;
      const double numeric = (loss_at(i, kH) - loss_at(i, -kH)) / (2 * kH);
      const double allowed = kRel * std::max(std::abs(grads[i]), std::abs(numeric)) + kAbs;
      const double error = std::abs(grads[i] - numeric);
      worst = std::max(worst, error / allowed);
      if (error > allowed && bad++ == 0)
        first_bad = tensor.name + "[" + std::to_string(i - tensor.offset) + "]: analytic " +
                    std::to_string(grads[i]) + ", numeric " + std::to_string(numeric);
    }
    INFO(tensor.name << ": " << n << " of " << tensor.size << " entries checked, worst error/allowed " << worst
                     << (bad ? ", first bad " + first_bad : std::string()));
    CHECK(bad == 0);
  }
}

TEST_CASE("forward-only gives the same loss, and grads are overwritten, not accumulated", "[ddp][gradients]") {
  const GptConfig config = gpt_tiny;
  const std::vector<int> tokens = {3, 3, 5, 1}, targets = {3, 5, 1, 3};
  auto params = curved_params(config);
  std::vector<double> grads(params.size(), 123.0), again(params.size());
  const double l1 = gpt_forward_backward(config, params, tokens, targets, 1, 4, grads);
  const double l2 = gpt_forward_backward(config, params, tokens, targets, 1, 4, again);
  CHECK(l1 == gpt_forward_backward(config, params, tokens, targets, 1, 4, {}));
  CHECK(l1 == l2);
  CHECK(grads == again);
}
