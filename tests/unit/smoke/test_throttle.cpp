#include <catch2/catch.hpp>

#include "hw/nvml_health.h"

using namespace gpuaccept;

TEST_CASE("clock event reasons decode to names", "[smoke][nvml]") {
  CHECK(describe_clock_events(0) == "none");
  CHECK(describe_clock_events(0x1) == "gpu_idle");
  CHECK(describe_clock_events(0x1 | 0x4) == "gpu_idle, sw_power_cap");
  CHECK(clock_event_names(0x40 | 0x80) == std::vector<std::string>{"hw_thermal_slowdown", "hw_power_brake_slowdown"});
  CHECK(clock_event_names(0x10000) == std::vector<std::string>{"0x10000"});  // unknown bits stay visible
}

TEST_CASE("only protective slowdowns are faults", "[smoke][nvml]") {
  // Idle, application clocks, power cap, sync boost, display clock: not faults.
  CHECK(clock_event_fault_bits(0x1 | 0x2 | 0x4 | 0x10 | 0x100) == 0);
  CHECK(clock_event_fault_bits(0x8) == 0x8);    // hw_slowdown
  CHECK(clock_event_fault_bits(0x20) == 0x20);  // sw_thermal_slowdown
  CHECK(clock_event_fault_bits(0x40) == 0x40);  // hw_thermal_slowdown
  CHECK(clock_event_fault_bits(0x80) == 0x80);  // hw_power_brake_slowdown
  CHECK(clock_event_fault_bits(0x1 | 0x40) == 0x40);
}
