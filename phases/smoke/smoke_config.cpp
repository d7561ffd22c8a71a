#include "smoke/smoke_config.h"

#include <fmt/format.h>

namespace gpuaccept::smoke {

namespace {

GemmDtype dtype_at(const Config& c, const YAML::Node& n, const std::string& key) {
  const auto name = c.as<std::string>(n, key);
  if (auto t = parse_gemm_dtype(name)) return *t;
  throw c.error_at(n, key, fmt::format("unknown dtype '{}' (bf16, fp16, tf32, fp32, fp8_e4m3)", name));
}

}  // namespace

SmokeConfig load_smoke_config(const Config& c) {
  // Every key read below: a typo (`gemm_sizze`) is refused, not left to the default.
  c.refuse_unknown_keys("smoke", {
      "allow_shared_gpus", "fs_dir", "fs_metadata_files", "fs_stream_bytes", "gemm_algos", "gemm_dtypes",
      "gemm_repeats", "gemm_sizes", "gemm_verify_rows", "gemm_workspace_bytes", "host_bytes",
      "max_temperature_c", "memory_bytes", "memory_repeats", "min_sample_ms", "nvlink_crc_per_second",
      "peer_bytes", "require_exclusive_cpus", "require_numa_affinity", "require_peer_access",
      "skip_gpu_benchmarks", "sustained_dtype", "sustained_seconds", "sustained_size", "warmup_ms"});
  SmokeConfig s;
  s.allow_shared_gpus = c.get("smoke.allow_shared_gpus", s.allow_shared_gpus);
  s.require_exclusive_cpus = c.get("smoke.require_exclusive_cpus", s.require_exclusive_cpus);
  s.require_numa_affinity = c.get("smoke.require_numa_affinity", s.require_numa_affinity);
  s.fs_dir = c.get("smoke.fs_dir", s.fs_dir);
  s.fs_metadata_files = c.get_positive("smoke.fs_metadata_files", s.fs_metadata_files);
  s.fs_stream_bytes = c.get_positive("smoke.fs_stream_bytes", s.fs_stream_bytes);
  s.max_temperature_c = c.get_optional<int>("smoke.max_temperature_c");
  s.nvlink_crc_per_second = c.get_positive("smoke.nvlink_crc_per_second", s.nvlink_crc_per_second);
  s.skip_gpu_benchmarks = c.get("smoke.skip_gpu_benchmarks", s.skip_gpu_benchmarks);

  if (const YAML::Node sizes = c.find("smoke.gemm_sizes"); sizes.IsDefined() && !sizes.IsNull()) {
    s.gemm_sizes = c.as<std::vector<int>>(sizes, "smoke.gemm_sizes");
    for (int v : s.gemm_sizes)
      if (v <= 0 || v % 16 != 0)  // fp8 needs dimensions that are multiples of 16
        throw c.error_at(sizes, "smoke.gemm_sizes", fmt::format("{} is not a positive multiple of 16", v));
  }
  if (const YAML::Node types = c.find("smoke.gemm_dtypes"); types.IsDefined() && !types.IsNull()) {
    if (!types.IsSequence()) throw c.error_at(types, "smoke.gemm_dtypes", "expected a list of dtypes");
    s.gemm_dtypes.clear();
    for (const auto& t : types) s.gemm_dtypes.push_back(dtype_at(c, t, "smoke.gemm_dtypes"));
  }
  s.gemm_repeats = c.get_positive("smoke.gemm_repeats", s.gemm_repeats);
  s.gemm_algos = c.get_positive("smoke.gemm_algos", s.gemm_algos);
  s.gemm_workspace_bytes = c.get_non_negative("smoke.gemm_workspace_bytes", s.gemm_workspace_bytes);
  s.gemm_verify_rows = c.get_positive("smoke.gemm_verify_rows", s.gemm_verify_rows);
  s.warmup_ms = c.get_non_negative("smoke.warmup_ms", s.warmup_ms);
  s.min_sample_ms = c.get_positive("smoke.min_sample_ms", s.min_sample_ms);
  s.memory_bytes = c.get_positive("smoke.memory_bytes", s.memory_bytes);
  s.memory_repeats = c.get_positive("smoke.memory_repeats", s.memory_repeats);
  s.host_bytes = c.get_positive("smoke.host_bytes", s.host_bytes);
  s.peer_bytes = c.get_positive("smoke.peer_bytes", s.peer_bytes);
  s.require_peer_access = c.get("smoke.require_peer_access", s.require_peer_access);
  s.sustained_seconds = c.get("smoke.sustained_seconds", s.sustained_seconds);
  if (s.sustained_seconds < 0)
    throw c.error_at(c.find("smoke.sustained_seconds"), "smoke.sustained_seconds", "must be 0 (skip) or more");
  s.sustained_size = c.get_positive("smoke.sustained_size", s.sustained_size);
  if (s.sustained_size % 16 != 0)
    throw c.error_at(c.find("smoke.sustained_size"), "smoke.sustained_size", "must be a multiple of 16");
  if (const YAML::Node t = c.find("smoke.sustained_dtype"); t.IsDefined() && !t.IsNull())
    s.sustained_dtype = dtype_at(c, t, "smoke.sustained_dtype");
  return s;
}

}  // namespace gpuaccept::smoke
