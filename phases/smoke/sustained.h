// Sustained load: the same checked GEMM back to back for smoke.sustained_seconds.
// Same inputs and a split-K-free algorithm give a bitwise identical result each time,
// so every iteration's output checksum is compared with the first one's: a mismatch
// is silent data corruption. Meanwhile NVML is sampled for the hottest temperature,
// the lowest SM clock and any clock-event reason that is a fault.
#pragma once

#include <vector>

#include "results/record.h"
#include "smoke/gpu_device.h"
#include "smoke/smoke_config.h"

namespace gpuaccept::smoke {

// Records test "sustained_load": metrics tflops, mismatches, max_temperature,
// min_sm_clock and throttle (params seconds, dtype, size).
std::vector<Record> run_sustained_load(const GpuDevice& gpu, const SmokeConfig& cfg);

}  // namespace gpuaccept::smoke
