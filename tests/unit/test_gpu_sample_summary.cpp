// GpuSampleSummary (src/hw/gpu_sample_summary.h): the ranges, median and mean it reports, and
// what it says of readings NVML did not give.
#include <catch2/catch.hpp>

#include "hw/gpu_sample_summary.h"

using gpuaccept::GpuSample;
using gpuaccept::GpuSampleSummary;

namespace {

GpuSample at(unsigned sm_mhz, unsigned power_mw, unsigned temp_c, std::uint64_t events) {
  GpuSample s;
  s.sm_clock_mhz = sm_mhz;
  s.power_mw = power_mw;
  s.temperature_c = temp_c;
  s.clock_events = events;
  return s;
}

}  // namespace

TEST_CASE("the summary gives the clock's range and median, the mean power and the reasons' counts", "[hw][nvml]") {
  GpuSampleSummary g;
  // An H200 at its power cap: the clock walks between 1410 and 1980 MHz while the power holds.
  g.add(at(1980, 650'000, 55, 0x0));
  g.add(at(1605, 699'000, 61, 0x4));
  g.add(at(1410, 700'000, 62, 0x4));
  g.add(at(1500, 695'000, 60, 0x4));
  REQUIRE(g.samples() == 4);
  CHECK(*g.min_sm_clock_mhz() == 1410);
  CHECK(*g.max_sm_clock_mhz() == 1980);
  CHECK(*g.median_sm_clock_mhz() == 1500);  // the lower middle of four: a clock NVML reported
  CHECK(*g.mean_power_w() == 686.0);
  CHECK(g.events().count(0x4) == 3);
  CHECK(g.describe() ==
        "SM clock 1410-1980 MHz (median 1500), power 686 W mean, hottest 62 C, clock-event reasons: "
        "sw_power_cap in 3 of 4 samples");
  g.add(at(1700, 690'000, 61, 0x4));
  CHECK(*g.median_sm_clock_mhz() == 1605);  // odd count: the middle one
}

TEST_CASE("the summary leaves out what NVML did not report", "[hw][nvml]") {
  GpuSampleSummary none;
  CHECK(none.samples() == 0);
  CHECK_FALSE(none.median_sm_clock_mhz());
  CHECK_FALSE(none.mean_power_w());
  CHECK(none.hottest() == "GPU temperature not reported");

  GpuSampleSummary empty_readings;  // NVML answered nothing: samples, but no reading in them
  empty_readings.add(GpuSample{});
  empty_readings.add(GpuSample{});
  CHECK(empty_readings.samples() == 2);
  CHECK(empty_readings.describe() == "2 samples, none with a reading");

  GpuSampleSummary memory;  // the memory's sensor without the core's
  GpuSample s;
  s.memory_temperature_c = 71;
  memory.add(s);
  CHECK(memory.hottest() == "GPU temperature not reported (memory 71 C)");
  CHECK(memory.describe() == "GPU temperature not reported (memory 71 C)");
}
