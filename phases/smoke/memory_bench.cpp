#include "smoke/memory_bench.h"

#include <cstring>
#include <random>

#include <fmt/format.h>

#include "common/progress.h"
#include "cuda/timing.h"
#include "smoke/kernels.h"
#include "smoke/random_fill.h"

namespace gpuaccept::smoke {

namespace {

constexpr std::size_t kChunkWords = 512;  // 4 KiB per checked chunk

Record bandwidth_record(const GpuDevice& gpu, const char* test, const char* key, const char* kind, double bytes_moved,
                        const Timing& t, std::uint64_t buffer_bytes, const std::string& check) {
  Record r = gpu_record(gpu, test);
  r.metric = "bandwidth";
  r.unit = "GB/s";
  r.value = bytes_moved / (t.median_ms * 1e-3) / 1e9;
  r.params = {{key, kind}, {"bytes", std::to_string(buffer_bytes)}};
  r.status = check.empty() ? Status::Pass : Status::Fail;
  r.message = fmt::format("{:.1f} GB/s over {} ({:.3f} ms median of {} samples){}", r.value,
                          format_bytes(static_cast<double>(buffer_bytes)), t.median_ms, t.per_launch_ms.size(),
                          check.empty() ? "; sampled output verified" : "; " + check);
  return r;
}

Record skipped(const GpuDevice& gpu, const char* test, const char* key, const char* kind, const std::string& why) {
  Record r = gpu_record(gpu, test);
  r.params = {{key, kind}};
  r.status = Status::Skip;
  r.message = why;
  return r;
}

}  // namespace

std::string check_pattern(const void* data, bool on_device, std::size_t words,
                          const std::function<std::uint64_t(std::size_t)>& expect, std::uint64_t seed, int chunks) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> buf(kChunkWords);
  const std::size_t starts = words > kChunkWords ? words - kChunkWords : 0;
  for (int c = 0; c < chunks; ++c) {
    // The first and last chunks always, the rest at random.
    const std::size_t first = c == 0 ? 0 : c == 1 ? starts : std::uniform_int_distribution<std::size_t>(0, starts)(rng);
    const std::size_t n = std::min(kChunkWords, words - first);
    const auto* src = static_cast<const std::uint64_t*>(data) + first;
    if (on_device)
      GPUACCEPT_CUDA_CHECK(cudaMemcpy(buf.data(), src, n * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
    else
      std::memcpy(buf.data(), src, n * sizeof(std::uint64_t));
    for (std::size_t i = 0; i < n; ++i)
      if (buf[i] != expect(first + i))
        return fmt::format("word {} is {:#018x}, expected {:#018x}{}", first + i, buf[i], expect(first + i),
                           buf[i] == ~0ull ? " (never written: still the poison)" : "");
  }
  return "";
}

std::vector<Record> measure_device_memory(const GpuDevice& gpu, const SmokeConfig& cfg) {
  const std::uint64_t bytes = cfg.memory_bytes / 16 * 16;  // whole 16-byte vectors
  std::size_t free = 0, total = 0;
  GPUACCEPT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  if (2 * bytes + (256ull << 20) > free) {
    const std::string why = fmt::format("needs 2 x {} of GPU memory, {} free (smoke.memory_bytes)",
                                        format_bytes(static_cast<double>(bytes)), format_bytes(static_cast<double>(free)));
    return {skipped(gpu, "memory_bandwidth", "kind", "d2d_copy", why),
            skipped(gpu, "memory_bandwidth", "kind", "read_write", why)};
  }
  const std::size_t words = bytes / 8;
  const std::uint64_t seed = 0x5eed0001;
  CudaStream stream;
  DeviceBuffer<std::uint64_t> src(words), dst(words);
  launch_fill_pattern(src.get(), words, seed, stream);
  const TimingPlan plan{cfg.warmup_ms, cfg.memory_repeats, cfg.min_sample_ms};
  auto pattern = [&](std::size_t i) { return pattern_word(seed, i); };
  std::vector<Record> out;

  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(dst.get(), 0xFF, bytes, stream));
  const Timing copy = time_launches(
      stream, [&] { GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream)); },
      plan);
  stream.synchronize();
  out.push_back(bandwidth_record(gpu, "memory_bandwidth", "kind", "d2d_copy", 2.0 * bytes, copy, bytes,
                                 check_pattern(dst.get(), true, words, pattern, seed + 1)));

  const StreamingLaunch launch = streaming_launch_config(gpu.index);
  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(dst.get(), 0xFF, bytes, stream));
  const Timing rw = time_launches(stream, [&] { launch_read_write(src.get(), dst.get(), bytes / 16, launch, stream); }, plan);
  stream.synchronize();
  Record r = bandwidth_record(gpu, "memory_bandwidth", "kind", "read_write", 2.0 * bytes, rw, bytes,
                              check_pattern(dst.get(), true, words, [&](std::size_t i) { return read_write_expected(pattern(i)); },
                                            seed + 2));
  r.params["grid"] = std::to_string(launch.grid);
  r.params["block"] = std::to_string(launch.block);
  out.push_back(std::move(r));
  return out;
}

std::vector<Record> measure_host_device(const GpuDevice& gpu, const SmokeConfig& cfg,
                                        const std::function<void()>& while_busy) {
  const std::uint64_t bytes = cfg.host_bytes / 8 * 8;
  const std::size_t words = bytes / 8;
  const std::uint64_t seed = 0x5eed0002;
  CudaStream stream;
  PinnedBuffer<std::uint64_t> host(words);
  DeviceBuffer<std::uint64_t> dev(words);
  for (std::size_t i = 0; i < words; ++i) host.get()[i] = pattern_word(seed, i);
  auto pattern = [&](std::size_t i) { return pattern_word(seed, i); };
  const TimingPlan plan{cfg.warmup_ms, cfg.memory_repeats, cfg.min_sample_ms};
  std::vector<Record> out;

  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(dev.get(), 0xFF, bytes, stream));
  auto h2d = [&] { GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(dev.get(), host.get(), bytes, cudaMemcpyHostToDevice, stream)); };
  const Timing up = time_launches(stream, h2d, plan);
  // More copies in flight while the caller samples the link: an idle link trains down.
  for (int i = 0; i < 8; ++i) h2d();
  while_busy();
  stream.synchronize();
  out.push_back(bandwidth_record(gpu, "host_device_bandwidth", "direction", "h2d", static_cast<double>(bytes), up, bytes,
                                 check_pattern(dev.get(), true, words, pattern, seed + 1)));

  std::memset(host.get(), 0xFF, bytes);
  const Timing down = time_launches(
      stream, [&] { GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(host.get(), dev.get(), bytes, cudaMemcpyDeviceToHost, stream)); },
      plan);
  stream.synchronize();
  out.push_back(bandwidth_record(gpu, "host_device_bandwidth", "direction", "d2h", static_cast<double>(bytes), down,
                                 bytes, check_pattern(host.get(), false, words, pattern, seed + 2)));
  return out;
}

}  // namespace gpuaccept::smoke
