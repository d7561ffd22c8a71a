#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>

#include "hw/clock_event_tally.h"
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

TEST_CASE("a field value reads as a temperature only when NVML returned one", "[smoke][nvml]") {
  using namespace gpuaccept::nvml_api;
  nvmlFieldValue_t v{};
  v.fieldId = NVML_FI_DEV_MEMORY_TEMP;
  v.nvmlReturn = NVML_SUCCESS;
  v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
  v.value.uiVal = 86;
  CHECK(field_value_unsigned(v) == 86u);
  v.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
  v.value.ullVal = 87;
  CHECK(field_value_unsigned(v) == 87u);
  v.value.ullVal = 1ull << 40;  // not a temperature: out of range
  CHECK_FALSE(field_value_unsigned(v).has_value());
  v.valueType = NVML_VALUE_TYPE_SIGNED_INT;
  v.value.siVal = -5;  // a negative count is an error, not a value
  CHECK_FALSE(field_value_unsigned(v).has_value());
  v.value.siVal = 40;
  CHECK(field_value_unsigned(v) == 40u);
  v.valueType = NVML_VALUE_TYPE_DOUBLE;
  v.value.dVal = 86.0;
  CHECK_FALSE(field_value_unsigned(v).has_value());
  // The GPU has no memory sensor (or the driver no such field): the value is undefined.
  v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
  v.value.uiVal = 86;
  v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
  CHECK_FALSE(field_value_unsigned(v).has_value());
}

TEST_CASE("the field value's layout is nvml.h's", "[smoke][nvml]") {
  // nvmlDeviceGetFieldValues writes into an array of these: a wrong size or offset would read
  // another field's bytes (nvml.h, NVML API v12: 40 bytes, the value last at 32).
  using gpuaccept::nvml_api::nvmlFieldValue_t;
  CHECK(sizeof(nvmlFieldValue_t) == 40);
  CHECK(offsetof(nvmlFieldValue_t, valueType) == 24);
  CHECK(offsetof(nvmlFieldValue_t, nvmlReturn) == 28);
  CHECK(offsetof(nvmlFieldValue_t, value) == 32);
}

TEST_CASE("the tally counts each reason by the samples that held it", "[smoke][nvml]") {
  ClockEventTally t;
  CHECK(t.describe() == "none");
  for (int i = 0; i < 198; ++i) t.add(0x4);  // at the power limit: expected under full load
  t.add(0x4 | 0x8);                           // hw_slowdown in one sample
  t.add(0x4 | 0x8 | 0x40);                    // and with hw_thermal_slowdown in another
  CHECK(t.samples() == 200);
  CHECK(t.seen() == (0x4 | 0x8 | 0x40));
  CHECK(t.count(0x4) == 200);
  CHECK(t.count(0x8) == 2);
  CHECK(t.count(0x40) == 1);
  CHECK(t.count(0x8 | 0x40) == 0);  // one bit at a time
  CHECK(t.describe() == "sw_power_cap in 200, hw_slowdown in 2, hw_thermal_slowdown in 1 of 200 samples");
  CHECK(t.describe(clock_event_fault_bits(t.seen())) == "hw_slowdown in 2, hw_thermal_slowdown in 1 of 200 samples");
  CHECK(t.describe(0x1) == "none");  // idle was never seen
  t.add(std::uint64_t{1} << 40);     // a reason newer than the table: its bit, counted
  CHECK(t.describe(std::uint64_t{1} << 40) == "0x10000000000 in 1 of 201 samples");
}
