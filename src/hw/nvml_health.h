// GPU health through NVML (loaded by hw/nvml.h): memory errors, row remapping,
// page retirement, clock-event ("throttle") reasons, temperature, power, clocks,
// PCIe link and NVLink error counters. Every query returns std::nullopt when this
// GPU or driver does not support it, so a caller records "not supported" instead
// of failing. The reason-bit decoding is pure and unit-tested.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/nvml.h"
#include "hw/nvml_api.h"

namespace gpuaccept {

// --- clock event reasons (nvmlClocksEventReason*, formerly ...ThrottleReason*) ---
struct ClockEventReason {
  std::uint64_t bit;
  const char* name;
  bool fault;  // hardware or thermal protection pulling clocks down; idle/app clocks are not
};
const std::vector<ClockEventReason>& clock_event_reasons();
std::vector<std::string> clock_event_names(std::uint64_t bits);  // known bits by name, others "0x..."
std::uint64_t clock_event_fault_bits(std::uint64_t bits);
std::string describe_clock_events(std::uint64_t bits);  // "gpu_idle, sw_power_cap" or "none"

// --- queries ---
struct RemappedRows {
  unsigned corrected = 0, uncorrected = 0;
  bool pending = false;  // a remap waits for the next GPU reset
  bool failure = false;  // a remap failed: the GPU has run out of spare rows
};

struct RetiredPages {
  unsigned single_bit = 0, double_bit = 0;  // pages retired per cause
  bool pending = false;                     // retirement waits for the next reboot
};

struct PcieLink {
  std::optional<unsigned> gen, width;
  std::optional<unsigned> max_gen, max_width;  // what this GPU in this slot can reach
  std::optional<unsigned> gpu_max_gen;         // what the GPU alone could reach (a Gen5 GPU in a Gen4 slot)
};

inline constexpr int kNvLinkErrorCounters = 5;
// DL replay, DL recovery, CRC flit, CRC data, ECC data (nvmlNvLinkErrorCounter_t order).
const std::array<const char*, kNvLinkErrorCounters>& nvlink_error_counter_names();

struct NvLinkStatus {
  int link = 0;
  bool active = false;
  // Per counter; nullopt where this GPU does not report it.
  std::array<std::optional<unsigned long long>, kNvLinkErrorCounters> errors{};
};

// A field value (nvmlDeviceGetFieldValues) as a count or a temperature: nullopt where NVML
// reports an error for it, or a negative or non-integral type it should not have.
std::optional<unsigned> field_value_unsigned(const nvml_api::nvmlFieldValue_t& v);

// A snapshot of what changes under load, for sampling during a benchmark.
struct GpuSample {
  std::optional<unsigned> temperature_c, sm_clock_mhz, mem_clock_mhz, power_mw;
  std::optional<std::uint64_t> clock_events;
  std::optional<unsigned> memory_temperature_c;  // HBM's sensor, where the GPU has one
};

class NvmlHealth {
 public:
  using Device = Nvml::Device;
  explicit NvmlHealth(const Nvml& nvml) : nvml_(nvml) {}

  std::optional<unsigned long long> ecc_uncorrected(Device d, bool aggregate) const;
  std::optional<RemappedRows> remapped_rows(Device d) const;
  std::optional<RetiredPages> retired_pages(Device d) const;
  std::optional<std::uint64_t> clock_events(Device d) const;
  std::optional<unsigned> temperature_c(Device d) const;
  std::optional<unsigned> slowdown_temperature_c(Device d) const;
  // The memory's own sensor (H100, H200: HBM), which can hold the clocks down for heat while the
  // GPU's core reads well below its slowdown threshold.
  std::optional<unsigned> memory_temperature_c(Device d) const;
  // The power drawn now (field NVML_FI_DEV_POWER_INSTANT). nvmlDeviceGetPowerUsage, the fallback,
  // averages over the last second on Ampere and newer: ddp's timed steps on an H200 read 454 W
  // mean that way, the idle second of a checkpoint write before them folded in.
  std::optional<unsigned> power_mw(Device d) const;
  std::optional<unsigned> power_limit_mw(Device d) const;
  std::optional<unsigned> clock_mhz(Device d, int clock_type) const;  // nvml_api::NVML_CLOCK_SM/MEM
  std::optional<unsigned> max_clock_mhz(Device d, int clock_type) const;
  PcieLink pcie_link(Device d) const;
  // Existing links (Nvml::nvlink_states) with their error counters.
  std::vector<NvLinkStatus> nvlinks(Device d) const;
  GpuSample sample(Device d) const;

 private:
  const Nvml& nvml_;
  template <typename... Args>
  bool ok(const char* fn, Args... args) const;
};

}  // namespace gpuaccept
