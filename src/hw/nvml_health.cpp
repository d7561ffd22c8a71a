#include "hw/nvml_health.h"

#include <fmt/format.h>

namespace gpuaccept {
using namespace nvml_api;

namespace {
// Values of NVIDIA's nvml.h (NVML API v12); declared here as nvml_api.h does,
// because the CUDA 13 toolkit ships no nvml.h.
constexpr int NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0;
constexpr int NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1;
constexpr int NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
}  // namespace

const std::vector<ClockEventReason>& clock_event_reasons() {
  static const std::vector<ClockEventReason> table = {
      {0x1, "gpu_idle", false},
      {0x2, "applications_clocks_setting", false},
      {0x4, "sw_power_cap", false},  // the board runs at its power limit: expected under full load
      {0x8, "hw_slowdown", true},
      {0x10, "sync_boost", false},
      {0x20, "sw_thermal_slowdown", true},
      {0x40, "hw_thermal_slowdown", true},
      {0x80, "hw_power_brake_slowdown", true},
      {0x100, "display_clock_setting", false},
  };
  return table;
}

std::vector<std::string> clock_event_names(std::uint64_t bits) {
  std::vector<std::string> out;
  std::uint64_t known = 0;
  for (const auto& r : clock_event_reasons()) {
    known |= r.bit;
    if (bits & r.bit) out.emplace_back(r.name);
  }
  if (const std::uint64_t rest = bits & ~known) out.push_back(fmt::format("{:#x}", rest));
  return out;
}

std::uint64_t clock_event_fault_bits(std::uint64_t bits) {
  std::uint64_t faults = 0;
  for (const auto& r : clock_event_reasons())
    if (r.fault) faults |= r.bit;
  return bits & faults;
}

std::string describe_clock_events(std::uint64_t bits) {
  const auto names = clock_event_names(bits);
  if (names.empty()) return "none";
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

const std::array<const char*, kNvLinkErrorCounters>& nvlink_error_counter_names() {
  static const std::array<const char*, kNvLinkErrorCounters> names = {"replay", "recovery", "crc_flit", "crc_data",
                                                                      "ecc_data"};
  return names;
}

template <typename... Args>
bool NvmlHealth::ok(const char* fn, Args... args) const {
  using Fn = nvmlReturn_t (*)(Args...);
  auto f = reinterpret_cast<Fn>(nvml_.symbol(fn));
  return f && f(args...) == NVML_SUCCESS;
}

std::optional<unsigned long long> NvmlHealth::ecc_uncorrected(Device d, bool aggregate) const {
  unsigned long long n = 0;
  if (ok("nvmlDeviceGetTotalEccErrors", d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
         aggregate ? NVML_AGGREGATE_ECC : NVML_VOLATILE_ECC, &n))
    return n;
  return std::nullopt;
}

std::optional<RemappedRows> NvmlHealth::remapped_rows(Device d) const {
  unsigned corr = 0, unc = 0, pending = 0, failure = 0;
  if (!ok("nvmlDeviceGetRemappedRows", d, &corr, &unc, &pending, &failure)) return std::nullopt;
  return RemappedRows{corr, unc, pending != 0, failure != 0};
}

std::optional<RetiredPages> NvmlHealth::retired_pages(Device d) const {
  // pageCount 0 with no buffers asks for the count only: NVML answers SUCCESS when
  // there are none and INSUFFICIENT_SIZE (count filled in) when there are some.
  auto count = [&](int cause) -> std::optional<unsigned> {
    using Fn = nvmlReturn_t (*)(Device, int, unsigned*, unsigned long long*, unsigned long long*);
    auto f = reinterpret_cast<Fn>(nvml_.symbol("nvmlDeviceGetRetiredPages_v2"));
    if (!f) return std::nullopt;
    unsigned n = 0;
    const nvmlReturn_t rc = f(d, cause, &n, nullptr, nullptr);
    if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE) return n;
    return std::nullopt;
  };
  const auto sbe = count(NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS);
  const auto dbe = count(NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR);
  if (!sbe || !dbe) return std::nullopt;
  nvmlEnableState_t pending = 0;
  const bool has_pending = ok("nvmlDeviceGetRetiredPagesPendingStatus", d, &pending);
  return RetiredPages{*sbe, *dbe, has_pending && pending == 1};
}

std::optional<std::uint64_t> NvmlHealth::clock_events(Device d) const {
  unsigned long long bits = 0;
  // The new name since driver 535; the old one stays for older drivers.
  if (ok("nvmlDeviceGetCurrentClocksEventReasons", d, &bits) ||
      ok("nvmlDeviceGetCurrentClocksThrottleReasons", d, &bits))
    return bits;
  return std::nullopt;
}

std::optional<unsigned> NvmlHealth::temperature_c(Device d) const {
  unsigned t = 0;
  if (ok("nvmlDeviceGetTemperature", d, NVML_TEMPERATURE_GPU, &t)) return t;
  return std::nullopt;
}

std::optional<unsigned> NvmlHealth::slowdown_temperature_c(Device d) const {
  unsigned t = 0;
  if (ok("nvmlDeviceGetTemperatureThreshold", d, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &t)) return t;
  return std::nullopt;
}

std::optional<unsigned> field_value_unsigned(const nvmlFieldValue_t& v) {
  if (v.nvmlReturn != NVML_SUCCESS) return std::nullopt;
  switch (v.valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_INT: return v.value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return v.value.usVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      if (v.value.ulVal <= 0xffffffffu) return static_cast<unsigned>(v.value.ulVal);
      return std::nullopt;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      if (v.value.ullVal <= 0xffffffffu) return static_cast<unsigned>(v.value.ullVal);
      return std::nullopt;
    case NVML_VALUE_TYPE_SIGNED_INT:
      if (v.value.siVal >= 0) return static_cast<unsigned>(v.value.siVal);
      return std::nullopt;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      if (v.value.sllVal >= 0 && v.value.sllVal <= 0xffffffffLL) return static_cast<unsigned>(v.value.sllVal);
      return std::nullopt;
    default: return std::nullopt;  // a double (or a type newer than this list) is not a count
  }
}

std::optional<unsigned> NvmlHealth::memory_temperature_c(Device d) const {
  nvmlFieldValue_t v{};
  v.fieldId = NVML_FI_DEV_MEMORY_TEMP;
  if (!ok("nvmlDeviceGetFieldValues", d, 1, &v)) return std::nullopt;
  return field_value_unsigned(v);
}

std::optional<unsigned> NvmlHealth::power_mw(Device d) const {
  nvmlFieldValue_t v{};
  v.fieldId = NVML_FI_DEV_POWER_INSTANT;
  if (ok("nvmlDeviceGetFieldValues", d, 1, &v))
    if (const auto instant = field_value_unsigned(v)) return instant;
  unsigned p = 0;  // a driver without the field: the second's average
  if (ok("nvmlDeviceGetPowerUsage", d, &p)) return p;
  return std::nullopt;
}

std::optional<unsigned> NvmlHealth::power_limit_mw(Device d) const { return nvml_.power_limit_mw(d); }

std::optional<unsigned> NvmlHealth::clock_mhz(Device d, int clock_type) const {
  unsigned c = 0;
  if (ok("nvmlDeviceGetClockInfo", d, clock_type, &c)) return c;
  return std::nullopt;
}

std::optional<unsigned> NvmlHealth::max_clock_mhz(Device d, int clock_type) const {
  unsigned c = 0;
  if (ok("nvmlDeviceGetMaxClockInfo", d, clock_type, &c)) return c;
  return std::nullopt;
}

PcieLink NvmlHealth::pcie_link(Device d) const {
  PcieLink l;
  auto get = [&](const char* fn) -> std::optional<unsigned> {
    unsigned v = 0;
    if (ok(fn, d, &v)) return v;
    return std::nullopt;
  };
  l.gen = get("nvmlDeviceGetCurrPcieLinkGeneration");
  l.width = get("nvmlDeviceGetCurrPcieLinkWidth");
  // Max...: capped by the slot, so a link trained below what the platform allows shows up
  // without blaming a Gen4 server for its Gen5 GPU.
  l.max_gen = get("nvmlDeviceGetMaxPcieLinkGeneration");
  l.gpu_max_gen = get("nvmlDeviceGetGpuMaxPcieLinkGeneration");
  l.max_width = get("nvmlDeviceGetMaxPcieLinkWidth");
  return l;
}

std::vector<NvLinkStatus> NvmlHealth::nvlinks(Device d) const {
  std::vector<NvLinkStatus> out;
  const auto states = nvml_.nvlink_states(d);
  for (unsigned link = 0; link < states.size(); ++link) {
    if (!states[link]) continue;
    NvLinkStatus s;
    s.link = static_cast<int>(link);
    s.active = *states[link];
    for (int c = 0; c < kNvLinkErrorCounters; ++c) {
      unsigned long long v = 0;
      if (ok("nvmlDeviceGetNvLinkErrorCounter", d, link, c, &v)) s.errors[c] = v;
    }
    out.push_back(s);
  }
  return out;
}

GpuSample NvmlHealth::sample(Device d) const {
  return {temperature_c(d), clock_mhz(d, NVML_CLOCK_SM), clock_mhz(d, NVML_CLOCK_MEM), power_mw(d), clock_events(d),
          memory_temperature_c(d)};
}

}  // namespace gpuaccept
