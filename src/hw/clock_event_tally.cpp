#include "hw/clock_event_tally.h"

#include <bit>

#include <fmt/format.h>

#include "hw/nvml_health.h"

namespace gpuaccept {

void ClockEventTally::add(std::uint64_t reasons) {
  ++samples_;
  seen_ |= reasons;
  for (std::uint64_t rest = reasons; rest != 0; rest &= rest - 1) ++counts_[std::countr_zero(rest)];
}

int ClockEventTally::count(std::uint64_t bit) const {
  return std::has_single_bit(bit) ? counts_[std::countr_zero(bit)] : 0;
}

std::string ClockEventTally::describe(std::uint64_t mask) const {
  const std::uint64_t shown = seen_ & mask;
  if (shown == 0) return "none";
  std::string s;
  for (std::uint64_t rest = shown; rest != 0; rest &= rest - 1) {
    const std::uint64_t bit = rest & (~rest + 1);  // the lowest bit left: NVML's order
    s += fmt::format("{}{} in {}", s.empty() ? "" : ", ", clock_event_names(bit).front(), count(bit));
  }
  return s + fmt::format(" of {} samples", samples_);
}

}  // namespace gpuaccept
