#include "fsdp-lora/fsdp_stats.h"

#include <algorithm>
#include <cmath>

namespace gpuaccept::fsdp {

double median_after(const std::vector<double>& values, int skip) {
  if (values.empty()) return NAN;
  const std::size_t from = std::min(values.size() - 1, static_cast<std::size_t>(std::max(skip, 0)));
  std::vector<double> v(values.begin() + static_cast<std::ptrdiff_t>(from), values.end());
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double hidden_percent(double gather_ms, double exposed_ms) {
  if (!(gather_ms > 0)) return 100.0;
  return std::clamp(100.0 * (1.0 - exposed_ms / gather_ms), 0.0, 100.0);
}

double scaling_efficiency(double per_gpu_at_scale, double per_gpu_alone) {
  const auto usable = [](double v) { return std::isfinite(v) && v > 0; };
  if (!usable(per_gpu_at_scale) || !usable(per_gpu_alone)) return NAN;
  return 100.0 * per_gpu_at_scale / per_gpu_alone;
}

}  // namespace gpuaccept::fsdp
