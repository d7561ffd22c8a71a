#include "train/run_records.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>

#include <fmt/format.h>

#include "common/log.h"
#include "train/weights_hash.h"

namespace gpuaccept::train {

std::vector<std::vector<double>> gather_doubles(World& world, const std::vector<double>& mine) {
  std::vector<std::vector<double>> out;
  for (const Bytes& b : world.allgather(std::as_bytes(std::span(mine)))) {
    std::vector<double> v(b.size() / sizeof(double));
    std::memcpy(v.data(), b.data(), v.size() * sizeof(double));
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<double> mean_over_ranks(World& world, const std::vector<double>& mine) {
  const auto all = gather_doubles(world, mine);
  std::vector<double> mean(mine.size(), 0.0);
  for (const auto& v : all)
    for (std::size_t i = 0; i < v.size() && i < mean.size(); ++i) mean[i] += v[i] / static_cast<double>(all.size());
  return mean;
}

std::size_t record_loss_curve(ResultWriter& out, const std::vector<double>& losses,
                              const std::vector<std::vector<double>>& first_nonfinite_step) {
  for (std::size_t i = 0; i < losses.size(); ++i)
    if (std::isfinite(losses[i])) out.job_measure("loss_curve", "loss", losses[i], "nats", {{"step", std::to_string(i + 1)}});

  // Finite everywhere: the first step where any rank saw NaN or Inf in its loss or in the
  // gradient norm fails it (a run that stopped early leaves NaN in the curve too).
  std::size_t bad = losses.size();
  for (std::size_t i = 0; i < losses.size(); ++i)
    if (!std::isfinite(losses[i])) {
      bad = i;
      break;
    }
  std::vector<int> ranks_bad;
  for (std::size_t r = 0; r < first_nonfinite_step.size(); ++r) {
    const auto step = static_cast<std::size_t>(first_nonfinite_step[r][0]);
    if (step == 0) continue;
    ranks_bad.push_back(static_cast<int>(r));
    bad = std::min(bad, step - 1);
  }
  out.job_check("finite", bad == losses.size() ? Status::Pass : Status::Fail,
            bad == losses.size()
                ? fmt::format("loss and gradient norm finite on every rank at all {} steps", losses.size())
                : fmt::format("NaN or Inf in the loss or gradient norm from step {} (ranks {})", bad + 1,
                              ranks_bad.empty() ? std::string("?") : fmt::format("{}", fmt::join(ranks_bad, ", "))));
  return bad;
}

void record_replicas(World& world, ResultWriter& out, const std::vector<float>& weights, const std::string& phase,
                     const std::string& what, const std::string& values) {
  const double h = std::bit_cast<double>(weights_hash(weights));
  const auto hashes = gather_doubles(world, {h});
  if (world.rank() != 0) return;
  std::vector<int> differ;
  for (std::size_t r = 0; r < hashes.size(); ++r)
    if (std::bit_cast<std::uint64_t>(hashes[r][0]) != std::bit_cast<std::uint64_t>(hashes[0][0]))
      differ.push_back(static_cast<int>(r));
  const Record& r = out.job_check(
      "replicas", differ.empty() ? Status::Pass : Status::Fail,
      differ.empty() ? fmt::format("all {} ranks hold bitwise identical {} (hash {:016x} of {} {})", hashes.size(),
                                   what, std::bit_cast<std::uint64_t>(h), weights.size(), values)
                     : fmt::format("ranks {} hold {} that differ from rank 0's", fmt::join(differ, ", "), what));
  log_rank0("{}: replicas {}: {}", phase, to_string(r.status), r.message);
}

void record_step_figures(ResultWriter& out, double per_gpu, double total, const StepRecord& m, const Params& scale) {
  out.job_measure("throughput", "tokens_per_s_per_gpu", per_gpu, "tokens/s", scale);
  out.job_measure("throughput", "tokens_per_s_total", total, "tokens/s", scale);
  for (auto [metric, value] : {std::pair{"forward_ms", m.forward_ms}, {"backward_ms", m.backward_ms},
                               {"comm_exposed_ms", m.comm_exposed_ms}, {"optimizer_ms", m.optimizer_ms},
                               {"step_ms", m.step_ms}, {"wall_ms", m.wall_ms}})
    out.job_measure("step_time", metric, value, "ms", scale);
}

std::string timed_gpu_note(const GpuSampleSummary& gpu, std::size_t timed_steps) {
  if (gpu.samples() == 0)
    return timed_steps == 0 ? "this GPU's clocks not sampled: no timed step"
                            : "this GPU's clocks not sampled: NVML did not find it";
  return fmt::format("this GPU over the {} timed steps: {}", timed_steps, gpu.describe());
}

}  // namespace gpuaccept::train
