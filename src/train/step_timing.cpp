#include "train/step_timing.h"

#include <algorithm>
#include <cmath>

namespace gpuaccept::train {

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

}  // namespace gpuaccept::train
