// Memory bandwidth of this rank's GPU: device memory (cudaMemcpyAsync D2D and a
// read-write kernel, bytes read + written per second) and host<->device over PCIe
// with pinned memory, each direction. Sources hold a counter-based pattern, outputs
// are poisoned first, and sampled chunks of every output are checked afterwards.
#pragma once

#include <functional>
#include <vector>

#include "results/record.h"
#include "smoke/gpu_device.h"
#include "smoke/smoke_config.h"

namespace gpuaccept::smoke {

// Records test "memory_bandwidth", kind d2d_copy and read_write.
std::vector<Record> measure_device_memory(const GpuDevice& gpu, const SmokeConfig& cfg);

// Records test "host_device_bandwidth", direction h2d and d2h. `while_busy` runs
// while host-to-device copies are in flight (the PCIe link check samples NVML there).
std::vector<Record> measure_host_device(const GpuDevice& gpu, const SmokeConfig& cfg,
                                        const std::function<void()>& while_busy);

// Checks `chunks` random chunks of `words` 64-bit words at device or host address
// `data` against expect(i); returns "" or the first mismatch.
std::string check_pattern(const void* data, bool on_device, std::size_t words,
                          const std::function<std::uint64_t(std::size_t)>& expect, std::uint64_t seed,
                          int chunks = 64);

}  // namespace gpuaccept::smoke
