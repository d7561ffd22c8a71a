#include "ddp/run_summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <string_view>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "common/log.h"
#include "cuda/cuda_check.h"
#include "train/gpu_peak.h"
#include "train/learning_check.h"
#include "train/run_records.h"

namespace gpuaccept::ddp {

using train::gather_doubles;

RunSummary::RunSummary(PhaseContext& ctx, const DdpConfig& config, const gpu::GptModel& model, RankDevice device,
                       std::optional<double> loss_floor)
    : ctx_(ctx), config_(config), model_(model), device_(std::move(device)), loss_floor_(loss_floor) {}

double RunSummary::tokens_per_step() const {
  return static_cast<double>(model_.tokens_per_micro_batch()) * config_.grad_accum;
}

void RunSummary::record_training(const TrainRun& run) {
  World& world = ctx_.world;
  ResultWriter& out = ctx_.results;
  // Every rank's per-step losses (NaN-padded to the planned length: a run that stopped early).
  std::vector<double> mine(static_cast<std::size_t>(config_.steps), NAN);
  for (const auto& s : run.steps) mine[static_cast<std::size_t>(s.step - 1)] = s.loss;
  global_losses_ = train::mean_over_ranks(world, mine);

  const auto nonfinite = gather_doubles(world, {static_cast<double>(run.first_nonfinite_step)});
  record_scale(run);
  if (world.rank() != 0) return;

  const std::size_t bad = train::record_loss_curve(out, global_losses_, nonfinite);

  // Learning: did the loss fall beyond its noise over a schedule long enough to show it
  // (train/learning_check.h)?
  const train::LearningSchedule schedule{config_.lr, config_.lr_warmup};
  const train::LearningJudgement learned = train::judge_learning(
      std::span(global_losses_).first(bad), config_.steps, schedule, kLearningBasis, loss_floor_);
  const Record& r = out.add(train::learning_record(learned, schedule, kLearningBasis));
  log_rank0("ddp: learning {}: {}", to_string(r.status), r.message);
}

void RunSummary::record_scale(const TrainRun& run) {
  World& world = ctx_.world;
  ResultWriter& out = ctx_.results;
  const StepRecord m = train::median_step(run.steps, config_.timing_skip);
  const double rate = tokens_per_step() / (m.step_ms / 1e3);
  // scale: how the GPUs trained (all together, each node, each GPU alone); gpus: how many
  // averaged gradients in one communicator; model, micro_batch, seq_len: what each GPU trained.
  // Threshold rules are written per GPU count and shape (a floor measured on GPT-2 124M at
  // 16 x 1024 says nothing of another model).
  const Params scale{{"scale", run.label},
                     {"gpus", std::to_string(run.comm_size)},
                     {"model", config_.model},
                     {"micro_batch", std::to_string(config_.micro_batch)},
                     {"seq_len", std::to_string(config_.seq_len)}};
  // This GPU's: named as smoke names it, so that the node grid and the fleet rule's warning
  // point at the card.
  Record& mine = out.measure("throughput", "tokens_per_s", rate, "tokens/s", scale);
  mine.gpu_index = device_.node_index;
  mine.gpu_uuid = device_.uuid;
  // The clocks and power it ran at: at a power cap, what sets a GPU's figure (not judged here:
  // smoke judges the clock-event reasons under its own load).
  const std::string gpu_seen = train::timed_gpu_note(
      run.gpu, run.steps.size() - std::min<std::size_t>(run.steps.size(), config_.timing_skip));
  mine.message = gpu_seen;

  const auto rates = gather_doubles(world, {rate});
  if (world.rank() != 0) return;
  double sum = 0;
  for (const auto& v : rates) sum += v[0];
  // In lockstep (all, node) every rank's rate is the same; alone, each GPU has its own.
  const double per_gpu = sum / static_cast<double>(rates.size());
  per_gpu_rate_[run.label] = per_gpu;
  if (run.label == "single_gpu") slowest_alone_ = train::slowest_alone(rates);
  engines_[run.label] = run.engine;
  gpus_[run.label] = run.comm_size;
  train::record_step_figures(out, per_gpu, sum, m, scale);
  const double flops = static_cast<double>(training_flops_per_token(model_.config(), model_.T()));
  const double peak = config_.peak_tflops > 0 ? config_.peak_tflops : train::bf16_peak_tflops(device_.name);
  if (peak > 0) {
    out.job_measure("mfu", "mfu", 100.0 * per_gpu * flops / (peak * 1e12), "%", scale).message =
        fmt::format("{:.3g} training FLOPs per token x {:.0f} tokens/s per GPU / {} TFLOP/s dense bf16 peak ({})",
                    flops, per_gpu, peak, config_.peak_tflops > 0 ? "ddp.peak_tflops" : device_.name);
  } else {
    out.job_check("mfu", Status::Skip, fmt::format("no bf16 peak known for '{}': set ddp.peak_tflops", device_.name), scale);
  }
  log_rank0("ddp: {}: {:.0f} tokens/s per GPU, {:.0f} in total; step {:.1f} ms = forward {:.1f} + backward {:.1f} + "
            "exposed communication {:.1f} + optimizer {:.1f}; {:.1f} ms a step on the host's clock",
            run.label, per_gpu, sum, m.step_ms, m.forward_ms, m.backward_ms, m.comm_exposed_ms, m.optimizer_ms,
            m.wall_ms);
  log_rank0("ddp: {}: rank 0's GPU: {}", run.label, gpu_seen);
}

void RunSummary::record_replicas(const std::vector<float>& weights) {
  train::record_replicas(ctx_.world, ctx_.results, weights, "ddp", "weights", "values");
}

void RunSummary::record_equivalence(const TrainRun& solo) {
  if (ctx_.world.rank() != 0) return;
  double worst = 0;
  std::size_t worst_step = 0;
  for (const auto& s : solo.steps) {
    const double d = std::abs(s.loss - global_losses_[static_cast<std::size_t>(s.step - 1)]);
    if (!(d <= worst)) worst = d, worst_step = static_cast<std::size_t>(s.step);
  }
  std::string curve;
  for (const auto& s : solo.steps)
    curve += fmt::format("{}{:.4f}/{:.4f}", curve.empty() ? "" : " ", s.loss, global_losses_[static_cast<std::size_t>(s.step - 1)]);
  Record& r = ctx_.results.job_measure("equivalence", "max_loss_diff", worst, "nats",
                                   {{"steps", std::to_string(solo.steps.size())}});
  r.status = !solo.steps.empty() && worst <= config_.equivalence_tolerance ? Status::Pass : Status::Fail;
  r.message = fmt::format("1 GPU with every rank's batches vs {} GPUs, loss per step (1 GPU/{} GPUs): {}; largest "
                          "difference {:.2e} at step {} (tolerance {})",
                          ctx_.world.size(), ctx_.world.size(), curve, worst, worst_step, config_.equivalence_tolerance);
  log_rank0("ddp: equivalence {}: {}", to_string(r.status), r.message);
}

void RunSummary::record_scaling() {
  if (ctx_.world.rank() != 0) return;
  const auto single = per_gpu_rate_.find("single_gpu");
  if (single == per_gpu_rate_.end()) return;
  for (const char* to : {"node", "all"}) {
    const auto it = per_gpu_rate_.find(to);
    if (it == per_gpu_rate_.end()) continue;
    // Against the slowest GPU alone at the `all` scale only (train/slowest_alone.h says why).
    const bool all = std::string_view(to) == "all";
    const std::string slowest = all ? train::slowest_alone_note(slowest_alone_, ctx_.world, it->second) : "";
    // `nodes`: across how many nodes this scale ran; the report's floors for scaling across
    // nodes (configs/thresholds/generic.yaml) apply from 2.
    const Params p{{"from", "single_gpu"}, {"to", to}, {"gpus", std::to_string(gpus_[to])},
                   {"nodes", std::to_string(all ? ctx_.world.node_count() : 1)}};
    ctx_.results.job_measure("scaling", "efficiency", 100.0 * it->second / single->second, "%", p)
        .message = fmt::format("{:.0f} tokens/s per GPU at scale {} vs {:.0f} on each GPU alone{} (gradients "
                               "all-reduced in {} by {})",
                               it->second, to, single->second, slowest, config_.grad_reduce, engines_[to]);
    if (all) train::record_vs_slowest(ctx_.results, slowest_alone_, ctx_.world, it->second, p);
    log_rank0("ddp: scaling efficiency single_gpu -> {}: {:.1f}%{}", to, 100.0 * it->second / single->second, slowest);
  }
}

void RunSummary::record_memory() {
  std::size_t free = 0, total = 0;
  GPUACCEPT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  ctx_.results.measure("memory", "device_used_gib", static_cast<double>(total - free) / (1ull << 30), "GiB")
      .message = fmt::format("of {:.1f} GiB on the device; the model's own buffers: {:.2f} GiB",
                             static_cast<double>(total) / (1ull << 30),
                             static_cast<double>(model_.device_bytes()) / (1ull << 30));
}

}  // namespace gpuaccept::ddp
