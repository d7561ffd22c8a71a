#include "hw/gpu_sample_summary.h"

#include <algorithm>

#include <fmt/format.h>

namespace gpuaccept {

void GpuSampleSummary::add(const GpuSample& s) {
  ++samples_;
  if (s.temperature_c) max_temp_ = std::max(max_temp_.value_or(0), *s.temperature_c);
  if (s.memory_temperature_c) max_memory_temp_ = std::max(max_memory_temp_.value_or(0), *s.memory_temperature_c);
  if (s.sm_clock_mhz) sm_clocks_.push_back(*s.sm_clock_mhz);
  if (s.power_mw) {
    power_sum_w_ += *s.power_mw / 1000.0;
    ++power_samples_;
  }
  if (s.clock_events) events_.add(*s.clock_events);
}

std::optional<unsigned> GpuSampleSummary::min_sm_clock_mhz() const {
  if (sm_clocks_.empty()) return std::nullopt;
  return *std::min_element(sm_clocks_.begin(), sm_clocks_.end());
}

std::optional<unsigned> GpuSampleSummary::max_sm_clock_mhz() const {
  if (sm_clocks_.empty()) return std::nullopt;
  return *std::max_element(sm_clocks_.begin(), sm_clocks_.end());
}

// The lower middle of an even count: a clock NVML reported, not an average of two.
std::optional<unsigned> GpuSampleSummary::median_sm_clock_mhz() const {
  if (sm_clocks_.empty()) return std::nullopt;
  std::vector<unsigned> sorted = sm_clocks_;
  const auto mid = sorted.begin() + static_cast<std::ptrdiff_t>((sorted.size() - 1) / 2);
  std::nth_element(sorted.begin(), mid, sorted.end());
  return *mid;
}

std::optional<double> GpuSampleSummary::mean_power_w() const {
  if (power_samples_ == 0) return std::nullopt;
  return power_sum_w_ / power_samples_;
}

std::string GpuSampleSummary::hottest() const {
  std::string s = max_temp_ ? fmt::format("hottest {} C", *max_temp_) : "GPU temperature not reported";
  if (max_memory_temp_) s += fmt::format(" (memory {} C)", *max_memory_temp_);
  return s;
}

std::string GpuSampleSummary::describe() const {
  std::vector<std::string> parts;
  if (!sm_clocks_.empty())
    parts.push_back(fmt::format("SM clock {}-{} MHz (median {})", *min_sm_clock_mhz(), *max_sm_clock_mhz(),
                                *median_sm_clock_mhz()));
  if (power_samples_ > 0)
    parts.push_back(fmt::format("power {:.0f} W mean", *mean_power_w()));
  if (max_temp_ || max_memory_temp_) parts.push_back(hottest());
  if (events_.samples() > 0) parts.push_back("clock-event reasons: " + events_.describe());
  return parts.empty() ? fmt::format("{} samples, none with a reading", samples_) : fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace gpuaccept
