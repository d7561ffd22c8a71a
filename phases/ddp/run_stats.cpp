#include "ddp/run_stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gpuaccept::ddp {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

StepRecord median_step(const std::vector<StepRecord>& steps, int skip) {
  const std::size_t first =
      std::min(static_cast<std::size_t>(std::max(skip, 0)), steps.empty() ? 0 : steps.size() - 1);
  auto med = [&](double StepRecord::*field) {
    std::vector<double> v;
    for (std::size_t i = first; i < steps.size(); ++i) v.push_back(steps[i].*field);
    return median(v);
  };
  StepRecord r;
  r.forward_ms = med(&StepRecord::forward_ms);
  r.backward_ms = med(&StepRecord::backward_ms);
  r.comm_exposed_ms = med(&StepRecord::comm_exposed_ms);
  r.optimizer_ms = med(&StepRecord::optimizer_ms);
  r.step_ms = med(&StepRecord::step_ms);
  r.wall_ms = med(&StepRecord::wall_ms);
  return r;
}

double bf16_peak_tflops(const std::string& name) {
  // Dense (no sparsity) bf16 tensor-core peaks of the SXM parts, from NVIDIA's data sheets.
  if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos) return 989.4;
  if (name.find("B200") != std::string::npos) return 2250;
  if (name.find("A100") != std::string::npos) return 312;
  return 0;
}

std::uint64_t weights_hash(const std::vector<float>& w) {
  std::uint64_t h = 1469598103934665603ULL;
  const auto* bytes = reinterpret_cast<const unsigned char*>(w.data());
  const std::size_t n = w.size() * sizeof(float);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    h = (h ^ word) * 1099511628211ULL;
  }
  for (; i < n; ++i) h = (h ^ bytes[i]) * 1099511628211ULL;
  return h;
}

double learning_threshold(int vocab, double floor, double fraction) {
  const double ln_v = std::log(static_cast<double>(vocab));
  return ln_v - fraction * (ln_v - floor);
}

}  // namespace gpuaccept::ddp
