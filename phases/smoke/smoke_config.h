// The smoke phase's settings: keys under `smoke.` in the YAML config, each with the
// default used when the key is absent. Read and validated once, before any check runs,
// so a typo stops the phase with the file, line and key instead of half a run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "smoke/gemm_verify.h"

namespace gpuaccept::smoke {

struct SmokeConfig {
  // Binding (see binding_checks.h)
  bool allow_shared_gpus = false;       // smoke.allow_shared_gpus
  bool require_exclusive_cpus = true;   // smoke.require_exclusive_cpus (false on the CPU test cluster: task/none)
  bool require_numa_affinity = false;   // smoke.require_numa_affinity
  // Shared filesystem
  std::string fs_dir;                      // smoke.fs_dir; "" = <run dir>/smoke.fs
  int fs_metadata_files = 200;             // smoke.fs_metadata_files
  std::uint64_t fs_stream_bytes = 256ull << 20;  // smoke.fs_stream_bytes
  // GPU health
  std::optional<int> max_temperature_c;            // smoke.max_temperature_c
  // smoke.nvlink_crc_per_second: per link, during the peer matrix. DCGM's rule is 100/s, from
  // before NVLink 4: healthy H200 links (NV18) gained 53-80/s under full peer copies, with no
  // replay, so a tenfold margin; replays and recoveries FAIL at any count.
  double nvlink_crc_per_second = 1000;
  // Benchmarks
  bool skip_gpu_benchmarks = false;                                     // smoke.skip_gpu_benchmarks
  std::vector<int> gemm_sizes = {4096, 8192, 16384};                    // smoke.gemm_sizes
  std::vector<GemmDtype> gemm_dtypes = {GemmDtype::bf16, GemmDtype::fp16, GemmDtype::tf32, GemmDtype::fp32,
                                        GemmDtype::fp8_e4m3};           // smoke.gemm_dtypes
  int gemm_repeats = 10;                                                // smoke.gemm_repeats (timed samples)
  int gemm_algos = 3;                                                   // smoke.gemm_algos (heuristic candidates tried)
  std::uint64_t gemm_workspace_bytes = 64ull << 20;                     // smoke.gemm_workspace_bytes
  int gemm_verify_rows = 16;  // smoke.gemm_verify_rows: rows x as many columns are checked (256 entries)
  double warmup_ms = 100;     // smoke.warmup_ms
  double min_sample_ms = 5;   // smoke.min_sample_ms
  std::uint64_t memory_bytes = 2ull << 30;  // smoke.memory_bytes (each of source and destination)
  int memory_repeats = 10;                  // smoke.memory_repeats
  std::uint64_t host_bytes = 512ull << 20;  // smoke.host_bytes (pinned host buffer)
  std::uint64_t peer_bytes = 256ull << 20;  // smoke.peer_bytes
  bool require_peer_access = true;          // smoke.require_peer_access
  double sustained_seconds = 10;            // smoke.sustained_seconds (0: skip)
  int sustained_size = 8192;                // smoke.sustained_size
  GemmDtype sustained_dtype = GemmDtype::bf16;  // smoke.sustained_dtype
};

// Throws InputError naming the file, line and key of a bad value.
SmokeConfig load_smoke_config(const Config& config);

}  // namespace gpuaccept::smoke
