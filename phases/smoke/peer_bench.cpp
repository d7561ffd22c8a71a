#include "smoke/peer_bench.h"

#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "common/progress.h"
#include "cuda/timing.h"
#include "hw/nvml_health.h"
#include "smoke/gpu_device.h"
#include "smoke/health_eval.h"
#include "smoke/kernels.h"
#include "smoke/memory_bench.h"
#include "smoke/random_fill.h"

namespace gpuaccept::smoke {

namespace {

struct PeerGpu {
  GpuDevice info;  // index, uuid for the records
  std::optional<Nvml::Device> nvml;     // the same GPU in NVML, for its link counters
  std::vector<NvLinkStatus> links_before;  // NVLink counters before the copies
  DeviceBuffer<std::uint64_t> src, dst;
  std::unique_ptr<CudaStream> stream;
};

std::uint64_t seed_of(int device) { return 0x5eed1000 + static_cast<std::uint64_t>(device); }

class DeviceGuard {  // restores the current device on scope exit
 public:
  DeviceGuard() { GPUACCEPT_CUDA_CHECK(cudaGetDevice(&saved_)); }
  ~DeviceGuard() { cudaSetDevice(saved_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int saved_ = 0;
};

// Records and messages name GPUs by their node index (GpuDevice::node_index), as every phase's.
Record peer_record(const PeerGpu& src, const PeerGpu& dst, const char* test) {
  Record r = gpu_record(src.info, test);
  r.params = {{"src", std::to_string(src.info.node_index)}, {"dst", std::to_string(dst.info.node_index)}};
  return r;
}

}  // namespace

std::vector<Record> measure_peer_matrix(int count, const SmokeConfig& cfg) {
  DeviceGuard guard;
  const std::size_t words = cfg.peer_bytes / 8;
  const std::size_t bytes = words * 8;
  std::vector<PeerGpu> gpus(static_cast<std::size_t>(count));
  std::vector<std::vector<int>> can(count, std::vector<int>(count, 0));
  for (int i = 0; i < count; ++i) {
    PeerGpu& g = gpus[i];
    GPUACCEPT_CUDA_CHECK(cudaSetDevice(i));
    cudaDeviceProp p{};
    GPUACCEPT_CUDA_CHECK(cudaGetDeviceProperties(&p, i));
    g.info.index = i;
    g.info.uuid = format_cuda_uuid(p.uuid);
    char bus_id[32] = {};
    GPUACCEPT_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, i));
    g.nvml = nvml_device_for_bus_id(bus_id);
    g.info.node_index = node_index_for_bus_id(bus_id, g.nvml, i);
    g.stream = std::make_unique<CudaStream>();
    g.src = DeviceBuffer<std::uint64_t>(words);
    g.dst = DeviceBuffer<std::uint64_t>(words);
    launch_fill_pattern(g.src.get(), words, seed_of(i), *g.stream);
    for (int j = 0; j < count; ++j) {
      if (j == i) continue;
      GPUACCEPT_CUDA_CHECK(cudaDeviceCanAccessPeer(&can[i][j], i, j));
      if (!can[i][j]) continue;
      const cudaError_t rc = cudaDeviceEnablePeerAccess(j, 0);
      if (rc == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
      else GPUACCEPT_CUDA_CHECK(rc);
    }
    g.stream->synchronize();
  }

  const NvmlHealth health(Nvml::instance());
  for (auto& g : gpus)
    if (g.nvml) g.links_before = health.nvlinks(*g.nvml);
  const auto traffic_start = std::chrono::steady_clock::now();

  const TimingPlan plan{10.0, cfg.memory_repeats, cfg.min_sample_ms};
  std::vector<Record> out;
  auto p2p_note = [&](int i, int j, Record& r) {
    r.params["p2p"] = can[i][j] ? "1" : "0";
    if (!can[i][j]) {
      r.status = cfg.require_peer_access ? Status::Fail : Status::Pass;
      r.message += fmt::format("; GPU {} cannot access GPU {} as a peer: the copy is staged through host memory{}",
                               gpus[i].info.node_index, gpus[j].info.node_index,
                               cfg.require_peer_access ? " (smoke.require_peer_access)" : "");
    }
  };

  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      if (i == j) continue;
      PeerGpu &a = gpus[i], &b = gpus[j];
      // One way: i's source into j's destination, poisoned first and checked after.
      GPUACCEPT_CUDA_CHECK(cudaSetDevice(j));
      GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(b.dst.get(), 0xFF, bytes, *b.stream));
      b.stream->synchronize();
      GPUACCEPT_CUDA_CHECK(cudaSetDevice(i));  // the copies and their timing events live on i
      cudaStream_t s = *a.stream;
      const Timing uni = time_launches(
          s, [&] { GPUACCEPT_CUDA_CHECK(cudaMemcpyPeerAsync(b.dst.get(), j, a.src.get(), i, bytes, s)); }, plan);
      a.stream->synchronize();
      const std::string check = check_pattern(
          b.dst.get(), true, words, [&](std::size_t w) { return pattern_word(seed_of(i), w); }, seed_of(i) + j);
      Record r = peer_record(a, b, "peer_bandwidth");
      r.metric = "bandwidth";
      r.unit = "GB/s";
      r.value = bytes / (uni.median_ms * 1e-3) / 1e9;
      r.params["mode"] = "uni";
      r.status = check.empty() ? Status::Pass : Status::Fail;
      r.message = fmt::format("GPU {} -> {}: {:.1f} GB/s over {}{}", a.info.node_index, b.info.node_index, r.value,
                              format_bytes(static_cast<double>(bytes)), check.empty() ? "; copy verified" : "; " + check);
      p2p_note(i, j, r);
      out.push_back(std::move(r));

      // Latency: back-to-back 8-byte copies; the per-copy time is what a tiny message costs.
      const Timing lat = time_launches(
          s, [&] { GPUACCEPT_CUDA_CHECK(cudaMemcpyPeerAsync(b.dst.get(), j, a.src.get(), i, 8, s)); },
          {10.0, cfg.memory_repeats, 1.0});
      Record l = peer_record(a, b, "peer_latency");
      l.metric = "latency";
      l.unit = "us";
      l.value = lat.median_ms * 1e3;
      l.message = fmt::format("GPU {} -> {}: {:.2f} us per 8-byte copy", a.info.node_index, b.info.node_index, l.value);
      p2p_note(i, j, l);
      out.push_back(std::move(l));

      if (j < i) continue;
      // Both ways at once: fork b's stream off a's, copy in each direction, join back.
      CudaEvent fork;  // on device i, recorded on a's stream
      GPUACCEPT_CUDA_CHECK(cudaSetDevice(j));
      CudaEvent join;  // on device j, recorded on b's stream
      GPUACCEPT_CUDA_CHECK(cudaSetDevice(i));
      const Timing bi = time_launches(
          s,
          [&] {
            fork.record(s);
            GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(*b.stream, fork, 0));
            GPUACCEPT_CUDA_CHECK(cudaMemcpyPeerAsync(b.dst.get(), j, a.src.get(), i, bytes, s));
            GPUACCEPT_CUDA_CHECK(cudaMemcpyPeerAsync(a.dst.get(), i, b.src.get(), j, bytes, *b.stream));
            join.record(*b.stream);
            GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(s, join, 0));
          },
          plan);
      Record bir = peer_record(a, b, "peer_bandwidth");
      bir.metric = "bandwidth";
      bir.unit = "GB/s";
      bir.value = 2.0 * bytes / (bi.median_ms * 1e-3) / 1e9;
      bir.params["mode"] = "bi";
      bir.message = fmt::format("GPU {} <-> {}: {:.1f} GB/s both directions together", a.info.node_index,
                                b.info.node_index, bir.value);
      p2p_note(i, j, bir);
      out.push_back(std::move(bir));
    }
  }
  // The copies drove every link: what the error counters gained meanwhile is this node's
  // NVLink verdict (the totals since the driver loaded are only reported, eval_nvlink).
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - traffic_start).count();
  for (const auto& g : gpus) {
    if (!g.nvml) continue;
    Record r = eval_nvlink_traffic(g.links_before, health.nvlinks(*g.nvml), seconds, cfg.nvlink_crc_per_second);
    r.gpu_index = g.info.node_index;
    r.gpu_uuid = g.info.uuid;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gpuaccept::smoke
