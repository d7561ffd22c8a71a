// What NVML showed of one GPU over a run of samples: smoke's sustained load, and each training
// run's timed steps (hw/nvml_sampler.h). The SM clock's range and median, the mean power
// drawn, the hottest core and memory readings, and how long each clock-event reason held. On a 700 W H200, ddp's step ran 26.5 ms for the first steps after an idle
// second and 29.2 ms from the fourth on, with sw_power_cap set (docs/performance.md): a
// throughput figure means little without the clocks it ran at.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hw/clock_event_tally.h"
#include "hw/nvml_health.h"

namespace gpuaccept {

class GpuSampleSummary {
 public:
  void add(const GpuSample& s);
  int samples() const { return samples_; }

  std::optional<unsigned> max_temperature_c() const { return max_temp_; }
  std::optional<unsigned> max_memory_temperature_c() const { return max_memory_temp_; }
  std::optional<unsigned> min_sm_clock_mhz() const;
  std::optional<unsigned> max_sm_clock_mhz() const;
  std::optional<unsigned> median_sm_clock_mhz() const;
  // The mean of the instant readings (NvmlHealth::power_mw): their peaks pass the limit (806 W on a
  // 700 W H200 under ddp), which the board holds on average, so a peak says little.
  std::optional<double> mean_power_w() const;
  const ClockEventTally& events() const { return events_; }

  // "hottest 70 C (memory 86 C)": both sensors, for a thermal slowdown the core's reading does
  // not explain (an H200 on 2026-11-28 slowed for heat at a core 19 C under its threshold).
  std::string hottest() const;
  // "SM clock 1485-1980 MHz (median 1650), power 673 W mean, hottest 58 C (memory 51 C),
  // clock-event reasons: sw_power_cap in 55 of 66 samples"; what was not reported is left out.
  std::string describe() const;

 private:
  int samples_ = 0;
  std::optional<unsigned> max_temp_, max_memory_temp_;
  std::vector<unsigned> sm_clocks_;  // every sample's, for the median
  double power_sum_w_ = 0;
  int power_samples_ = 0;
  ClockEventTally events_;  // the clock-event reasons, counted by the samples that held them
};

}  // namespace gpuaccept
