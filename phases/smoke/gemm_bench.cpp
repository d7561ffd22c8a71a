#include "smoke/gemm_bench.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "common/progress.h"
#include "cuda/timing.h"
#include "smoke/kernels.h"

namespace gpuaccept::smoke {

namespace {

// `count` distinct indices in [0, limit), sorted.
std::vector<int> sample_indices(int count, int limit, std::mt19937_64& rng) {
  std::vector<int> all(static_cast<std::size_t>(limit));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(static_cast<std::size_t>(std::min(count, limit)));
  std::sort(all.begin(), all.end());
  return all;
}

std::vector<std::byte> copy_back(const void* src, std::size_t bytes) {
  std::vector<std::byte> out(bytes);
  GPUACCEPT_CUDA_CHECK(cudaMemcpy(out.data(), src, bytes, cudaMemcpyDeviceToHost));
  return out;
}

const std::byte* at(const void* base, std::size_t offset) { return static_cast<const std::byte*>(base) + offset; }

}  // namespace

GemmCheck verify_gemm(const LtGemm& g, const void* a, const void* b, const void* d, int rows, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto is = sample_indices(rows, g.m(), rng);
  const auto js = sample_indices(rows, g.n(), rng);
  const std::size_t k = static_cast<std::size_t>(g.k()), in_b = input_bytes(g.type()), out_b = output_bytes(g.type());
  std::vector<std::vector<double>> a_rows, b_cols;
  for (int i : is) a_rows.push_back(decode_inputs(g.type(), copy_back(at(a, i * k * in_b), k * in_b).data(), k));
  for (int j : js) b_cols.push_back(decode_inputs(g.type(), copy_back(at(b, j * k * in_b), k * in_b).data(), k));
  std::vector<double> got(is.size() * js.size());
  const std::size_t m = static_cast<std::size_t>(g.m());
  for (std::size_t q = 0; q < js.size(); ++q) {
    // Column j of D is contiguous (ldd = m): one copy per sampled column.
    const auto col = decode_outputs(g.type(), copy_back(at(d, js[q] * m * out_b), m * out_b).data(), m);
    for (std::size_t r = 0; r < is.size(); ++r) got[r * js.size() + q] = col[static_cast<std::size_t>(is[r])];
  }
  return check_gemm_samples(g.type(), is, a_rows, js, b_cols, got);
}

std::string describe_check(const GemmCheck& c) {
  if (c.ok()) return fmt::format("verified {} sampled entries (worst error {:.2g} of allowed)", c.checked, c.worst_ratio);
  return fmt::format("{} of {} sampled entries wrong, {} never written; first: {}", c.bad, c.checked, c.unwritten,
                     c.first_problem);
}

Record measure_gemm(const GpuDevice& gpu, GemmDtype type, int size, const SmokeConfig& cfg) {
  Record r = gpu_record(gpu, "gemm");
  r.metric = "tflops";
  r.unit = "TFLOP/s";
  const std::string dim = std::to_string(size);
  r.params = {{"dtype", std::string(to_string(type))}, {"m", dim}, {"n", dim}, {"k", dim}};
  if (gpu.cc < min_compute_capability(type)) {
    r.status = Status::Skip;
    r.message = fmt::format("{} GEMM needs compute capability {}.{}+, {} is {}.{}", to_string(type),
                            min_compute_capability(type) / 10, min_compute_capability(type) % 10, gpu.name,
                            gpu.cc / 10, gpu.cc % 10);
    return r;
  }
  LtGemm gemm(type, size, size, size, cfg.gemm_workspace_bytes);
  // Operands that fit in L2 would be timed from cache: rotate among enough input sets
  // to make every launch read from HBM.
  const std::size_t operands = gemm.a_bytes() + gemm.b_bytes();
  const int sets = operands < 2 * gpu.l2_bytes
                       ? static_cast<int>(std::min<std::size_t>(8, (3 * gpu.l2_bytes + operands - 1) / operands))
                       : 1;
  std::size_t free = 0, total = 0;
  GPUACCEPT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const std::size_t need = sets * operands + gemm.d_bytes() + (256ull << 20);
  if (need > free) {
    r.status = Status::Skip;
    r.message = fmt::format("needs {} of GPU memory, {} free", format_bytes(static_cast<double>(need)),
                            format_bytes(static_cast<double>(free)));
    return r;
  }
  CudaStream stream;
  std::vector<DeviceBuffer<std::byte>> as, bs;
  for (int s = 0; s < sets; ++s) {
    as.emplace_back(gemm.a_bytes());
    bs.emplace_back(gemm.b_bytes());
    launch_fill_gemm_input(as.back().get(), gemm.a_bytes() / input_bytes(type), type, 1000 + 2 * s, stream);
    launch_fill_gemm_input(bs.back().get(), gemm.b_bytes() / input_bytes(type), type, 1001 + 2 * s, stream);
  }
  DeviceBuffer<std::byte> d(gemm.d_bytes());

  const auto algos = gemm.algorithms(cfg.gemm_algos, false);
  if (algos.empty()) {
    r.status = Status::Fail;
    r.message = fmt::format("cuBLASLt returned no algorithm for {} {}^3 on {}", to_string(type), size, gpu.name);
    return r;
  }
  std::size_t chosen = 0;
  int set = 0;
  auto launcher = [&](std::size_t algo) {
    return [&, algo] {
      gemm.run(algos[algo], as[set].get(), bs[set].get(), d.get(), stream);
      set = (set + 1) % sets;
    };
  };
  // The heuristic's first guess is usually best, not always: time each candidate
  // briefly and keep the fastest (the first one also warms the GPU up).
  if (algos.size() > 1) {
    double best = INFINITY;
    for (std::size_t i = 0; i < algos.size(); ++i) {
      const TimingPlan quick{i == 0 ? cfg.warmup_ms : 10.0, 3, cfg.min_sample_ms};
      const double ms = time_launches(stream, launcher(i), quick).median_ms;
      if (ms < best) best = ms, chosen = i;
    }
  }
  const Timing t = time_launches(stream, launcher(chosen),
                                 {algos.size() > 1 ? 10.0 : cfg.warmup_ms, cfg.gemm_repeats, cfg.min_sample_ms});
  r.value = gemm.flops() / (t.median_ms * 1e-3) / 1e12;

  // Verify the chosen algorithm on input set 0, after poisoning D with NaN (0xFF bytes
  // are NaN in bf16, fp16 and fp32) so an entry it never wrote cannot pass.
  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(d.get(), 0xFF, d.bytes(), stream));
  gemm.run(algos[chosen], as[0].get(), bs[0].get(), d.get(), stream);
  stream.synchronize();
  const GemmCheck check = verify_gemm(gemm, as[0].get(), bs[0].get(), d.get(), cfg.gemm_verify_rows, 42 + size);

  // Params name the measurement, so that every GPU of a model shares them (the report's fleet
  // rules compare records with equal params). What each GPU's run happened to choose or take
  // (the fastest algorithm, the samples) goes in the message: as a param it split identical
  // GPUs into fleets of one or two (four H100s, 2026-11-26: a third of the GEMM records).
  r.params["algos_tried"] = std::to_string(algos.size());
  r.params["input_sets"] = std::to_string(sets);
  r.status = check.ok() ? Status::Pass : Status::Fail;
  r.message = fmt::format("{:.1f} TFLOP/s ({:.3f} ms median of {} samples x {} launches; heuristic algo #{} of {} "
                          "tried); {}",
                          r.value, t.median_ms, t.per_launch_ms.size(), t.launches_per_sample, chosen, algos.size(),
                          describe_check(check));
  return r;
}

}  // namespace gpuaccept::smoke
