#include "smoke/sustained.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "common/progress.h"
#include "cuda/timing.h"
#include "hw/gpu_sample_summary.h"
#include "hw/nvml_health.h"
#include "smoke/gemm_bench.h"
#include "smoke/kernels.h"
#include "smoke/lt_gemm.h"

namespace gpuaccept::smoke {

std::vector<Record> run_sustained_load(const GpuDevice& gpu, const SmokeConfig& cfg) {
  const GemmDtype type = cfg.sustained_dtype;
  const int size = cfg.sustained_size;
  auto base = [&](const char* metric, const char* unit) {
    Record r = gpu_record(gpu, "sustained_load");
    r.metric = metric;
    r.unit = unit;
    r.params = {{"seconds", fmt::format("{:g}", cfg.sustained_seconds)},
                {"dtype", std::string(to_string(type))},
                {"size", std::to_string(size)}};
    return r;
  };
  const char* metrics[][2] = {
      {"tflops", "TFLOP/s"}, {"mismatches", "count"}, {"max_temperature", "C"}, {"min_sm_clock", "MHz"}, {"throttle", "count"}};
  auto all_skipped = [&](const std::string& why) {
    std::vector<Record> out;
    for (const auto& m : metrics) {
      Record r = base(m[0], m[1]);
      r.status = Status::Skip;
      r.message = why;
      out.push_back(std::move(r));
    }
    return out;
  };
  if (cfg.sustained_seconds <= 0) return all_skipped("smoke.sustained_seconds is 0");
  if (gpu.cc < min_compute_capability(type))
    return all_skipped(fmt::format("{} needs compute capability {}+", to_string(type), min_compute_capability(type)));

  LtGemm gemm(type, size, size, size, cfg.gemm_workspace_bytes);
  const auto algos = gemm.algorithms(1, /*deterministic=*/true);
  if (algos.empty()) return all_skipped("cuBLASLt has no split-K-free algorithm for this GEMM");
  CudaStream stream;
  DeviceBuffer<std::byte> a(gemm.a_bytes()), b(gemm.b_bytes()), d(gemm.d_bytes());
  launch_fill_gemm_input(a.get(), gemm.a_bytes() / input_bytes(type), type, 2000, stream);
  launch_fill_gemm_input(b.get(), gemm.b_bytes() / input_bytes(type), type, 2001, stream);
  const auto* words = reinterpret_cast<const std::uint32_t*>(d.get());
  const std::size_t word_count = gemm.d_bytes() / 4;

  // Every iteration poisons D first: a GEMM that silently did not run cannot match.
  auto poisoned_gemm = [&] {
    GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(d.get(), 0xFF, d.bytes(), stream));
    gemm.run(algos[0], a.get(), b.get(), d.get(), stream);
  };

  // Reference: the first result, verified against the host, and its checksum.
  DeviceBuffer<unsigned long long> sums(1);
  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(sums.get(), 0, sizeof(unsigned long long), stream));
  poisoned_gemm();
  launch_checksum(words, word_count, sums.get(), stream);
  unsigned long long reference = 0;
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(&reference, sums.get(), sizeof reference, cudaMemcpyDeviceToHost, stream));
  stream.synchronize();
  const GemmCheck first = verify_gemm(gemm, a.get(), b.get(), d.get(), cfg.gemm_verify_rows, 7);

  // Batches of ~200 ms: the host waits on one event per batch and samples NVML meanwhile.
  CudaEvent t0, t1;
  t0.record(stream);
  poisoned_gemm();
  t1.record(stream);
  const double iter_ms = std::max(static_cast<double>(t1.elapsed_ms_since(t0)), 1e-3);
  const int batch = static_cast<int>(std::clamp(200.0 / iter_ms, 1.0, 2000.0));
  sums = DeviceBuffer<unsigned long long>(static_cast<std::size_t>(batch));
  std::vector<CudaEvent> starts(static_cast<std::size_t>(batch)), stops(static_cast<std::size_t>(batch));
  CudaEvent done;
  std::vector<unsigned long long> host_sums(static_cast<std::size_t>(batch));
  std::vector<double> gemm_ms;
  long long iterations = 0, mismatches = 0;
  GpuSampleSummary watch;  // what NVML showed while the load ran
  const NvmlHealth health(Nvml::instance());

  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(cfg.sustained_seconds);
  while (std::chrono::steady_clock::now() < until) {
    GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(sums.get(), 0, sums.bytes(), stream));
    for (int i = 0; i < batch; ++i) {
      GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(d.get(), 0xFF, d.bytes(), stream));
      starts[i].record(stream);  // the events time the GEMM alone
      gemm.run(algos[0], a.get(), b.get(), d.get(), stream);
      stops[i].record(stream);
      launch_checksum(words, word_count, sums.get() + i, stream);
    }
    done.record(stream);
    for (;;) {
      const cudaError_t q = cudaEventQuery(done);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) GPUACCEPT_CUDA_CHECK(q);
      if (gpu.nvml) watch.add(health.sample(*gpu.nvml));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    GPUACCEPT_CUDA_CHECK(cudaMemcpy(host_sums.data(), sums.get(), sums.bytes(), cudaMemcpyDeviceToHost));
    for (int i = 0; i < batch; ++i) {
      gemm_ms.push_back(stops[i].elapsed_ms_since(starts[i]));
      if (host_sums[static_cast<std::size_t>(i)] != reference) ++mismatches;
    }
    iterations += batch;
  }

  std::vector<Record> out;
  Record tf = base("tflops", "TFLOP/s");
  tf.value = gemm.flops() / (median(gemm_ms) * 1e-3) / 1e12;
  tf.message = fmt::format("{:.1f} TFLOP/s median over {} {} {}^3 GEMMs in {:g} s", tf.value, iterations,
                           to_string(type), size, cfg.sustained_seconds);
  out.push_back(std::move(tf));

  Record mm = base("mismatches", "count");
  mm.value = static_cast<double>(mismatches);
  mm.status = mismatches == 0 && first.ok() ? Status::Pass : Status::Fail;
  mm.message = fmt::format("{} of {} results differ from the first one's checksum{}; first result: {}", mismatches,
                           iterations, mismatches ? " (silent data corruption)" : "", describe_check(first));
  out.push_back(std::move(mm));

  const std::string no_nvml = "no NVML samples: " + (gpu.nvml_reason.empty() ? "NVML did not answer" : gpu.nvml_reason);
  Record temp = base("max_temperature", "C");
  if (watch.max_temperature_c()) {
    const auto slowdown = gpu.nvml ? health.slowdown_temperature_c(*gpu.nvml) : std::nullopt;
    const int limit = cfg.max_temperature_c ? *cfg.max_temperature_c : slowdown ? static_cast<int>(*slowdown) : 85;
    temp.value = *watch.max_temperature_c();
    temp.params["limit_c"] = std::to_string(limit);
    temp.status = static_cast<int>(*watch.max_temperature_c()) >= limit ? Status::Fail : Status::Pass;
    temp.message = fmt::format("{} over {} samples, limit {} C ({})", watch.hottest(), watch.samples(), limit,
                               cfg.max_temperature_c ? "smoke.max_temperature_c" : slowdown ? "NVML slowdown threshold" : "default");
    if (const auto watts = watch.mean_power_w()) temp.message += fmt::format("; power {:.0f} W mean", *watts);
  } else {
    temp.status = Status::Skip;
    temp.message = no_nvml;
  }
  out.push_back(std::move(temp));

  Record clock = base("min_sm_clock", "MHz");
  if (watch.min_sm_clock_mhz()) {
    clock.value = *watch.min_sm_clock_mhz();
    clock.message = fmt::format("SM clock {}-{} MHz under load (median {})", *watch.min_sm_clock_mhz(),
                                *watch.max_sm_clock_mhz(), *watch.median_sm_clock_mhz());
  } else {
    clock.status = Status::Skip;
    clock.message = no_nvml;
  }
  out.push_back(std::move(clock));

  Record thr = base("throttle", "count");
  if (watch.samples() > 0) {
    const std::uint64_t faults = clock_event_fault_bits(watch.events().seen());
    thr.value = static_cast<double>(clock_event_names(faults).size());
    thr.params["bits"] = fmt::format("{:#x}", watch.events().seen());
    thr.status = faults ? Status::Fail : Status::Pass;
    thr.message = faults ? fmt::format("clocks held down under load by {} (all reasons seen: {}); {}",
                                       watch.events().describe(faults), watch.events().describe(), watch.hottest())
                         : fmt::format("clock event reasons seen under load: {}", watch.events().describe());
  } else {
    thr.status = Status::Skip;
    thr.message = no_nvml;
  }
  out.push_back(std::move(thr));
  return out;
}

}  // namespace gpuaccept::smoke
