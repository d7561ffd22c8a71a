// How often each clock-event ("throttle") reason was set over a run of NVML samples: smoke's
// sustained load samples every 50 ms, and a reason set in every sample of ten seconds reads
// differently from one set in a single sample, which the bits OR-ed together cannot tell apart.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace gpuaccept {

class ClockEventTally {
 public:
  void add(std::uint64_t reasons);  // one sample's nvmlDeviceGetCurrentClocksEventReasons
  int samples() const { return samples_; }
  std::uint64_t seen() const { return seen_; }  // every reason set in at least one sample
  int count(std::uint64_t bit) const;           // samples with this one bit set
  // The reasons of `mask` that were seen, with their counts, in the order of their bits (NVML's
  // table; a bit newer than it by its value): "hw_slowdown in 37, hw_thermal_slowdown in 40 of
  // 200 samples"; "none" where none was seen.
  std::string describe(std::uint64_t mask = ~std::uint64_t{0}) const;

 private:
  int samples_ = 0;
  std::uint64_t seen_ = 0;
  std::array<int, 64> counts_{};  // by bit position
};

}  // namespace gpuaccept
