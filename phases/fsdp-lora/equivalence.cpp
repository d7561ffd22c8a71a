#include "fsdp-lora/equivalence.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace gpuaccept::fsdp {

std::vector<int> rank_shards(int rank, int accum) {
  std::vector<int> s;
  for (int a = 0; a < accum; ++a) s.push_back(rank * accum + a);
  return s;
}

std::vector<int> replay_shards(int ranks, int accum) {
  std::vector<int> s;
  for (int r = 0; r < ranks; ++r)
    for (int shard : rank_shards(r, accum)) s.push_back(shard);
  return s;
}

LossComparison compare_losses(std::span<const double> a, std::span<const double> b) {
  LossComparison c;
  const std::size_t n = std::min(a.size(), b.size());
  c.compared = static_cast<int>(n);
  for (std::size_t i = 0; i < n; ++i) {
    double d = std::abs(a[i] - b[i]);
    if (!std::isfinite(d)) d = std::numeric_limits<double>::infinity();
    if (c.worst_step == 0 || d > c.worst) c.worst = d, c.worst_step = static_cast<int>(i) + 1;
  }
  return c;
}

namespace {

double relative(std::span<const float> a, std::span<const float> b, std::span<const float> base) {
  if (a.size() != b.size() || (!base.empty() && base.size() != a.size()))
    throw std::invalid_argument(fmt::format("relative_l2: {} values against {}{}", a.size(), b.size(),
                                            base.empty() ? "" : fmt::format(" (base {})", base.size())));
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double o = base.empty() ? 0.0 : static_cast<double>(base[i]);
    const double x = static_cast<double>(a[i]) - o, y = static_cast<double>(b[i]) - o;
    diff += (x - y) * (x - y);
    ref += y * y;
  }
  if (!std::isfinite(diff) || !std::isfinite(ref)) return std::numeric_limits<double>::infinity();
  if (ref == 0) return diff == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(diff / ref);
}

}  // namespace

double relative_l2(std::span<const float> a, std::span<const float> b) { return relative(a, b, {}); }

double relative_l2_of_updates(std::span<const float> a, std::span<const float> b, std::span<const float> base) {
  if (base.size() != a.size())
    throw std::invalid_argument(fmt::format("relative_l2_of_updates: base has {} values, a {}", base.size(), a.size()));
  return relative(a, b, base);
}

}  // namespace gpuaccept::fsdp
