// GPU health verdicts from NVML readings (test "gpu_health", params item=...). Pure
// functions of the values, so each rule is unit-tested; health_checks.cpp reads the
// values. A reading this GPU does not support becomes a SKIP that says so.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hw/nvml_health.h"
#include "results/record.h"

namespace gpuaccept::smoke {

Record health_record(const char* item);

// Volatile (since the last driver load) uncorrectable errors FAIL. Aggregate (lifetime)
// ones FAIL too unless row remapping reports them handled (nothing pending, no failure).
Record eval_ecc(std::optional<unsigned long long> volatile_unc, std::optional<unsigned long long> aggregate_unc,
                const std::optional<RemappedRows>& remap);
// A pending remap needs a GPU reset; a failed remap means the GPU is out of spare rows.
Record eval_row_remap(const std::optional<RemappedRows>& remap);
// Pre-Ampere page retirement; nullopt (no record) when the GPU uses row remapping instead.
std::optional<Record> eval_retired_pages(const std::optional<RetiredPages>& pages, bool has_row_remap);
// FAIL on hardware/thermal slowdown and power brake; idle, app clocks, power cap are not faults.
Record eval_clock_events(std::optional<std::uint64_t> bits);
// FAIL at or above `limit_c`: smoke.max_temperature_c, else 5 C below NVML's slowdown
// threshold, else 85 C.
Record eval_temperature(std::optional<unsigned> temp_c, std::optional<unsigned> slowdown_c,
                        std::optional<int> configured_max_c);
Record eval_power(std::optional<unsigned> power_mw, std::optional<unsigned> limit_mw);
Record eval_clock(const char* item, std::optional<unsigned> mhz, std::optional<unsigned> max_mhz);
// Width below the maximum FAILs; a lower generation FAILs only `under_load`, because
// idle GPUs train their links down to save power.
Record eval_pcie(const PcieLink& link, bool under_load);
// Inactive links beside active ones FAIL; link recoveries FAIL. The other counters (replay,
// CRC, ECC) count since the driver loaded and are reported, not judged: a healthy NVLink 4
// collects a few hundred corrected errors over days, and nothing here says when they came.
// eval_nvlink_traffic judges what the counters gain under load.
Record eval_nvlink(const std::vector<NvLinkStatus>& links);
// The counters before and after `seconds` of traffic on the links (smoke's peer matrix).
// FAIL: a link that went down, a recovery or a data-link replay, or a link whose CRC errors
// (flit + data) came faster than `crc_per_second_limit` (smoke.nvlink_crc_per_second, 1000/s:
// healthy NVLink 4 links gain tens a second under load, see smoke_config.h). ECC-corrected
// data errors are reported only. The value is the worst link's CRC rate.
Record eval_nvlink_traffic(const std::vector<NvLinkStatus>& before, const std::vector<NvLinkStatus>& after,
                           double seconds, double crc_per_second_limit);

}  // namespace gpuaccept::smoke
