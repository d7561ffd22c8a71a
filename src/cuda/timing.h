// Timing GPU work the way nvbench does it, small enough for every phase to reuse:
// warm up until clocks and caches settle, batch launches so that each timed sample
// lasts long enough for CUDA events to resolve it, and report the median sample.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "cuda/cuda_handles.h"

namespace gpuaccept {

// Median of `v` (mean of the middle two for an even count); NaN when empty. A median,
// not a mean: one sample disturbed by a neighbour's burst must not move the result.
inline double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  const double upper = *mid;
  const double lower = *std::max_element(v.begin(), mid);
  return (lower + upper) / 2;
}

struct TimingPlan {
  double warmup_ms = 50;       // busy time before measuring, so boost clocks are reached
  int samples = 10;            // timed samples; the result is their median
  double min_sample_ms = 2;    // a sample batches launches until it lasts this long
  int max_launches_per_sample = 100000;
};

struct Timing {
  std::vector<double> per_launch_ms;  // one value per sample
  double median_ms = std::numeric_limits<double>::quiet_NaN();
  int launches_per_sample = 1;
};

// Times `launch`, which enqueues one operation on `stream` (it may fork work to other
// streams, as long as it joins them back to `stream`). Throws CallError on CUDA errors.
inline Timing time_launches(cudaStream_t stream, const std::function<void()>& launch, const TimingPlan& plan) {
  CudaEvent begin, end;
  auto batch_ms = [&](int launches) {
    begin.record(stream);
    for (int i = 0; i < launches; ++i) launch();
    end.record(stream);
    return static_cast<double>(end.elapsed_ms_since(begin));
  };
  double per_launch = std::max(batch_ms(1), 1e-4);
  const int warm = static_cast<int>(std::clamp(std::ceil(plan.warmup_ms / per_launch), 0.0,
                                               static_cast<double>(plan.max_launches_per_sample)));
  if (warm > 0) per_launch = std::max(batch_ms(warm) / warm, 1e-4);

  Timing t;
  t.launches_per_sample = static_cast<int>(std::clamp(std::ceil(plan.min_sample_ms / per_launch), 1.0,
                                                      static_cast<double>(plan.max_launches_per_sample)));
  // Samples back to back, sharing boundary events: no host round trip between them.
  std::vector<CudaEvent> marks(static_cast<std::size_t>(std::max(plan.samples, 1)) + 1);
  marks[0].record(stream);
  for (std::size_t s = 1; s < marks.size(); ++s) {
    for (int i = 0; i < t.launches_per_sample; ++i) launch();
    marks[s].record(stream);
  }
  for (std::size_t s = 1; s < marks.size(); ++s)
    t.per_launch_ms.push_back(marks[s].elapsed_ms_since(marks[s - 1]) / t.launches_per_sample);
  t.median_ms = median(t.per_launch_ms);
  return t;
}

}  // namespace gpuaccept
