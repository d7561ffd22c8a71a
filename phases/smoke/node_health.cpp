#include "smoke/node_health.h"

#include <algorithm>
#include <mutex>
#include <thread>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "hw/nvml.h"
#include "smoke/gemm_bench.h"
#include "smoke/gpu_device.h"
#include "smoke/health_checks.h"
#include "smoke/memory_bench.h"
#include "smoke/smoke_config.h"
#include "smoke/xid_log.h"

namespace gpuaccept::smoke {

namespace {

// smoke's settings scaled down to a health check's seconds.
SmokeConfig quick_config(const HealthOptions& o) {
  SmokeConfig c;
  c.gemm_repeats = 3;
  c.gemm_algos = 1;
  c.warmup_ms = 10;
  c.min_sample_ms = 1;
  c.memory_bytes = o.copy_bytes;
  c.memory_repeats = 3;
  return c;
}

struct GpuFindings {
  std::string name, bus_id;
  std::vector<std::string> problems, notes;
};

// Everything about CUDA device `index`, on the calling thread (one thread per GPU).
GpuFindings check_gpu(int index, const SmokeConfig& cfg, const HealthOptions& o) {
  GpuFindings f;
  const GpuDevice gpu = select_gpu(index);
  if (!gpu.present()) {
    f.problems.push_back(fmt::format("GPU {}: {}", index, gpu.reason));
    return f;
  }
  f.name = gpu.name;
  f.bus_id = gpu.bus_id;
  const std::string where = fmt::format("GPU {} ({})", index, gpu.bus_id);
  const auto judge = [&](const Record& r) {
    if (r.status == Status::Fail || r.status == Status::Error)
      f.problems.push_back(fmt::format("{}: {} {}", where, r.test, r.message));
    else if (r.status == Status::Skip && r.test != "gpu_health")
      f.notes.push_back(fmt::format("{}: {} skipped: {}", where, r.test, r.message));
  };
  for (const auto& r : gpu_health_checks(gpu, cfg)) judge(r);
  judge(measure_gemm(gpu, GemmDtype::bf16, o.gemm_size, cfg));
  for (const auto& r : measure_device_memory(gpu, cfg))
    if (r.params.count("kind") && r.params.at("kind") == "d2d_copy") judge(r);
  return f;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

HealthResult check_node_health(const HealthOptions& o) {
  HealthResult h;
  if (!o.debug_fail.empty()) h.problems.push_back("injected by --debug-fail: " + o.debug_fail);

  // GPUs present: CUDA's count against NVML's and the expectation.
  const Nvml& nvml = Nvml::instance();
  int cuda_count = 0;
  if (cudaGetDeviceCount(&cuda_count) != cudaSuccess) cuda_count = 0;
  (void)cudaGetLastError();
  const int nvml_count = nvml.available() ? nvml.device_count() : 0;
  h.gpus = cuda_count;
  if (o.expect_gpus >= 0 && cuda_count != o.expect_gpus)
    h.problems.push_back(fmt::format("{} GPU(s) usable by CUDA, {} expected (NVML sees {})", cuda_count,
                                     o.expect_gpus, nvml_count));
  else if (o.expect_gpus < 0 && cuda_count == 0)
    h.problems.push_back(fmt::format("no GPU usable by CUDA ({}); on a node without GPUs give --expect-gpus 0",
                                     nvml.available() ? fmt::format("NVML sees {}", nvml_count) : nvml.reason()));
  else if (o.expect_gpus < 0 && cuda_count != nvml_count)
    h.problems.push_back(fmt::format("{} GPU(s) usable by CUDA but NVML sees {}", cuda_count, nvml_count));

  // Driver and CUDA as the cluster expects.
  if (!o.expect_driver.empty() && nvml.driver_version() != o.expect_driver)
    h.problems.push_back(fmt::format("driver {}, {} expected", nvml.available() ? nvml.driver_version() : "unknown",
                                     o.expect_driver));
  if (o.expect_cuda > 0 && nvml.cuda_driver_version().value_or(0) != o.expect_cuda)
    h.problems.push_back(fmt::format("driver's CUDA {}, {} expected", nvml.cuda_driver_version().value_or(0),
                                     o.expect_cuda));

  // Every GPU at once: the contexts' start-up is most of a small check's time.
  const SmokeConfig cfg = quick_config(o);
  std::vector<GpuFindings> found(static_cast<std::size_t>(cuda_count));
  std::vector<std::thread> threads;
  for (int i = 0; i < cuda_count; ++i)
    threads.emplace_back([&, i] { found[static_cast<std::size_t>(i)] = check_gpu(i, cfg, o); });
  for (auto& t : threads) t.join();
  for (const auto& f : found) {
    h.problems.insert(h.problems.end(), f.problems.begin(), f.problems.end());
    h.notes.insert(h.notes.end(), f.notes.begin(), f.notes.end());
  }
  if (!found.empty()) h.gpu_name = found.front().name;

  // XIDs: the driver's own record of faults, matched to this node's GPUs by PCI address.
  if (o.read_xids && (cuda_count > 0 || nvml_count > 0)) {
    std::string error;
    const std::string log = read_kernel_log(error);
    if (!error.empty()) h.notes.push_back("XIDs not read: " + error);
    for (const auto& e : parse_xid_lines(log)) {
      const auto why = critical_xid(e.xid);
      if (!why) continue;
      std::string gpu = e.pci;
      for (std::size_t i = 0; i < found.size(); ++i)
        if (lower(found[i].bus_id).find(lower(e.pci)) != std::string::npos) gpu = fmt::format("GPU {} ({})", i, e.pci);
      h.problems.push_back(fmt::format("{}: XID {} since boot ({}): {}", gpu, e.xid, *why, e.line));
    }
  }
  return h;
}

}  // namespace gpuaccept::smoke
