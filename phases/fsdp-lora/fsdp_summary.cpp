#include "fsdp-lora/fsdp_summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string_view>
#include <span>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "common/log.h"
#include "common/progress.h"
#include "cuda/cuda_check.h"
#include "fsdp-lora/equivalence.h"
#include "fsdp-lora/fsdp_stats.h"
#include "train/gpu_peak.h"
#include "train/learning_check.h"
#include "train/run_records.h"

namespace gpuaccept::fsdp {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

using train::gather_doubles;

FsdpSummary::FsdpSummary(PhaseContext& ctx, const FsdpConfig& config, RankDevice device,
                         std::optional<double> loss_floor)
    : ctx_(ctx), config_(config), device_(std::move(device)), loss_floor_(loss_floor) {}

double FsdpSummary::tokens_per_step() const {
  return static_cast<double>(config_.micro_batch) * config_.seq_len * config_.grad_accum;
}

void FsdpSummary::record_training(const FsdpRun& run) {
  World& world = ctx_.world;
  ResultWriter& out = ctx_.results;
  // Every rank's per-step losses (NaN-padded to the planned length: a run that stopped early).
  std::vector<double> mine(static_cast<std::size_t>(config_.steps), NAN);
  for (const auto& s : run.steps) mine[static_cast<std::size_t>(s.time.step - 1)] = s.time.loss;
  const std::vector<double> losses = train::mean_over_ranks(world, mine);
  losses_ = losses;
  const auto nonfinite = gather_doubles(world, {static_cast<double>(run.first_nonfinite_step)});
  record_throughput(run);
  if (world.rank() != 0) return;

  const std::size_t bad = train::record_loss_curve(out, losses, nonfinite);

  // Learning: did the loss fall beyond chance over a schedule long enough to show it
  // (train/learning_check.h)?
  const train::LearningSchedule schedule{config_.lr, config_.lr_warmup};
  const train::LearningJudgement learned =
      train::judge_learning(std::span(losses).first(bad), config_.steps, schedule, kLearningBasis, loss_floor_);
  const Record& r = out.add(train::learning_record(learned, schedule, kLearningBasis));
  log_rank0("fsdp-lora: learning {}: {}", to_string(r.status), r.message);
}

Params FsdpSummary::shape_params() const {
  return {{"model", config_.model},
          {"layers", std::to_string(config_.model_config().layers)},
          {"seq_len", std::to_string(config_.seq_len)},
          {"micro_batch", std::to_string(config_.micro_batch)},
          {"recompute", config_.recompute ? "true" : "false"}};
}

void FsdpSummary::record_throughput(const FsdpRun& run) {
  World& world = ctx_.world;
  ResultWriter& out = ctx_.results;
  std::vector<train::StepRecord> times;
  std::vector<double> gather_ms, exposed_ms, gather_bytes;
  for (const auto& s : run.steps) {
    times.push_back(s.time);
    gather_ms.push_back(s.gather_ms);
    exposed_ms.push_back(s.gather_exposed_ms);
    gather_bytes.push_back(s.gather_bytes);
  }
  if (times.empty()) return;  // (every rank alike: the run stopped before its first step)
  const train::StepRecord m = train::median_step(times, config_.timing_skip);
  const double rate = tokens_per_step() / (m.step_ms / 1e3);
  Params scale = shape_params();
  scale["scale"] = run.label;
  scale["gpus"] = std::to_string(run.comm_size);
  // This GPU's: named as smoke names it, so that the node grid and the fleet rule's warning
  // point at the card.
  Record& mine = out.measure("throughput", "tokens_per_s", rate, "tokens/s", scale);
  mine.gpu_index = device_.node_index;
  mine.gpu_uuid = device_.uuid;
  const std::string gpu_seen =
      train::timed_gpu_note(run.gpu, times.size() - std::min<std::size_t>(times.size(), config_.timing_skip));
  mine.message = gpu_seen;
  const double g_ms = median_after(gather_ms, config_.timing_skip);
  const double g_exposed = median_after(exposed_ms, config_.timing_skip);
  const double g_bytes = median_after(gather_bytes, config_.timing_skip);
  // Per rank: the gathers are this GPU's communication (a slow link shows on its ranks).
  out.measure("gather", "gather_ms", g_ms, "ms", scale).message =
      fmt::format("gathers of the frozen base per step ({}) on the communication stream (median over steps {}..)",
                  run.gather_engine, config_.timing_skip + 1);
  out.measure("gather", "exposed_ms", g_exposed, "ms", scale).message =
      "per step, time the compute stream waited for a gather (not hidden behind compute)";
  out.measure("gather", "hidden_pct", hidden_percent(g_ms, g_exposed), "%", scale);
  if (g_ms > 0)
    out.measure("gather", "algbw_gbps", g_bytes / (g_ms / 1e3) / 1e9, "GB/s", scale).message =
        fmt::format("{} gathered per step / gather time (algorithm bandwidth; bus bandwidth x N/(N-1))",
                    format_bytes(g_bytes));

  const auto rates = gather_doubles(world, {rate});
  if (world.rank() != 0) return;
  double sum = 0;
  for (const auto& v : rates) sum += v[0];
  // In lockstep (all, node) every rank's rate is the same; alone, each GPU has its own.
  const double per_gpu = sum / static_cast<double>(rates.size());
  per_gpu_rate_[run.label] = per_gpu;
  if (run.label == "single_gpu") slowest_alone_ = train::slowest_alone(rates);
  gpus_[run.label] = run.comm_size;
  train::record_step_figures(out, per_gpu, sum, m, scale);

  // FLOPs: qwen_config.h's training_flops_per_token (what the GPU runs: the frozen base's matmuls
  // forward and input gradient, the projections a recomputed layer runs again, attention, LoRA;
  // training_flops_formula says it in words). The anchor's count ((6|4) x all base parameters +
  // 12 L C T) is in the params too, to compare with torch_fsdp_lora_qwen2_7b.py.
  const QwenConfig model = config_.model_config();
  const double flops = static_cast<double>(training_flops_per_token(model, config_.lora, config_.seq_len, config_.recompute,
                                                                      config_.recompute_keep));
  const double anchor = static_cast<double>(anchor_flops_per_token(model, config_.seq_len, config_.recompute));
  Params p = scale;
  p["flops_per_token"] = fmt::format("{:.6g}", flops);
  p["anchor_flops_per_token"] = fmt::format("{:.6g}", anchor);
  p["flop_formula"] = training_flops_formula(config_.recompute, config_.recompute_keep);
  const double tflops = per_gpu * flops / 1e12;
  out.job_measure("mfu", "tflops_per_gpu", tflops, "TFLOP/s", p).message =
      fmt::format("hardware TFLOP/s per GPU: {:.4g} FLOPs per token x {:.0f} tokens/s per GPU (anchor's count: {:.4g} "
                  "TFLOP/s)",
                  flops, per_gpu, per_gpu * anchor / 1e12);
  const double peak = config_.peak_tflops > 0 ? config_.peak_tflops : train::bf16_peak_tflops(device_.name);
  if (peak > 0) {
    p["peak_tflops"] = fmt::format("{}", peak);
    out.job_measure("mfu", "mfu", 100.0 * tflops / peak, "%", p).message =
        fmt::format("{:.4g} TFLOP/s per GPU / {} TFLOP/s dense bf16 peak ({})", tflops, peak,
                    config_.peak_tflops > 0 ? "fsdp_lora.peak_tflops" : device_.name);
  } else {
    out.job_check("mfu", Status::Skip, fmt::format("no bf16 peak known for '{}': set fsdp_lora.peak_tflops", device_.name), p);
  }
  log_rank0("fsdp-lora: {}: {:.0f} tokens/s per GPU, {:.0f} in total, {:.1f} TFLOP/s per GPU; step {:.1f} ms = forward "
            "{:.1f} + backward {:.1f} + exposed all-reduce {:.1f} + optimizer {:.1f}; all-gathers {:.1f} ms a step, "
            "{:.1f} ms of it exposed; {:.1f} ms a step on the host's clock",
            run.label, per_gpu, sum, tflops, m.step_ms, m.forward_ms, m.backward_ms, m.comm_exposed_ms, m.optimizer_ms,
            g_ms, g_exposed, m.wall_ms);
  log_rank0("fsdp-lora: {}: rank 0's GPU: {}", run.label, gpu_seen);
}

void FsdpSummary::record_scale(const FsdpRun& run) { record_throughput(run); }

void FsdpSummary::record_scaling() {
  if (ctx_.world.rank() != 0) return;
  const auto single = per_gpu_rate_.find("single_gpu");
  if (single == per_gpu_rate_.end()) return;
  for (const char* to : {"node", "all"}) {
    const auto it = per_gpu_rate_.find(to);
    if (it == per_gpu_rate_.end()) continue;
    const double eff = scaling_efficiency(it->second, single->second);
    Params p = shape_params();
    p["from"] = "single_gpu";
    p["to"] = to;
    p["gpus"] = std::to_string(gpus_[to]);
    // Against the slowest GPU alone at the `all` scale only (train/slowest_alone.h says why).
    const bool all = std::string_view(to) == "all";
    // `nodes`: across how many nodes this scale ran (the report's floors across nodes apply from 2).
    p["nodes"] = std::to_string(all ? ctx_.world.node_count() : 1);
    Record& r = ctx_.results.job_measure("scaling", "efficiency", eff, "%", p);
    const std::string slowest = all ? train::slowest_alone_note(slowest_alone_, ctx_.world, it->second) : "";
    r.message = fmt::format("{:.0f} tokens/s per GPU at scale {} ({} GPUs, the base sharded over them) vs {:.0f} on "
                            "each GPU alone (the whole base on it, no gathers){}; issue 16's target: >= 95%",
                            it->second, to, gpus_[to], single->second, slowest);
    if (!std::isfinite(eff)) r.status = Status::Fail;
    if (all) train::record_vs_slowest(ctx_.results, slowest_alone_, ctx_.world, it->second, p);
    log_rank0("fsdp-lora: scaling efficiency single_gpu -> {} ({} GPUs): {:.1f}%{}", to, gpus_[to], eff, slowest);
  }
}

void FsdpSummary::record_equivalence(const FsdpRun& solo, const LoraSnapshot& replay, const LoraSnapshot& sharded,
                                     const std::vector<float>& init, int steps) {
  World& world = ctx_.world;
  if (world.rank() != 0) return;
  ResultWriter& out = ctx_.results;
  const int W = world.size();
  std::vector<double> one_gpu;
  for (const auto& s : solo.steps) one_gpu.push_back(s.time.loss);
  const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(steps), losses_.size());
  const std::span<const double> all_gpus(losses_.data(), n);
  const LossComparison c = compare_losses(one_gpu, all_gpus);
  std::string curve;
  for (std::size_t i = 0; i < std::min(one_gpu.size(), n); ++i)
    curve += fmt::format("{}{:.5f}/{:.5f}", curve.empty() ? "" : " ", one_gpu[i], all_gpus[i]);
  Params p = shape_params();
  p["steps"] = std::to_string(steps);
  p["ranks"] = std::to_string(W);
  p["grad_accum"] = std::to_string(config_.grad_accum);
  Record& loss = out.job_measure("equivalence", "max_loss_diff", c.worst, "nats", p);
  const bool all_steps = c.compared == steps;
  loss.status = all_steps && c.worst <= config_.equivalence_tolerance ? Status::Pass : Status::Fail;
  loss.message = fmt::format(
      "rank 0 alone, the whole base on its GPU, replaying the {} ranks' {} micro-batch(es) a step as gradient "
      "accumulation vs the {} GPUs with the base sharded (the all-GPU run's first steps), same LoRA initialisation, "
      "data and dropout masks; loss per step (1 GPU/{} GPUs): {}; largest difference {:.2e} nats at step {} "
      "(tolerance {}, fsdp_lora.equivalence_tolerance){}",
      W, W * config_.grad_accum, W, W, curve.empty() ? "none" : curve, c.worst, c.worst_step,
      config_.equivalence_tolerance,
      all_steps ? "" : fmt::format("; only {} of {} steps compared (a run stopped early)", c.compared, steps));
  log_rank0("fsdp-lora: equivalence {}: {}", to_string(loss.status), loss.message);

  const bool have = replay.step == steps && sharded.step == steps && replay.grads_step == 1 && sharded.grads_step == 1;
  const double grad_err = have ? relative_l2(replay.grads, sharded.grads) : NAN;
  const double weight_err = have ? relative_l2(replay.lora, sharded.lora) : NAN;
  const double update_err = have ? relative_l2_of_updates(replay.lora, sharded.lora, init) : NAN;
  const std::string missing = fmt::format("no LoRA state after step {}: the {} run stopped before it", steps,
                                          replay.step != steps ? "single-GPU" : "all-GPU");
  Record& g = out.job_measure("equivalence", "lora_grad_rel_err", grad_err, "", p);
  g.status = have && grad_err <= config_.grad_tolerance ? Status::Pass : Status::Fail;
  g.message = have ? fmt::format("step 1's LoRA gradients (the mean over all ranks' micro-batches, before clipping; "
                                 "both sides from the same initial weights), 1 GPU vs {} GPUs: relative L2 error {:.2e} "
                                 "(tolerance {}, fsdp_lora.grad_tolerance: the gradient check's bf16 tolerance)",
                                 W, grad_err, config_.grad_tolerance)
                   : missing;
  Record& w = out.job_measure("equivalence", "lora_weight_rel_err", weight_err, "", p);
  w.status = have && weight_err <= kEquivalenceWeightTolerance ? Status::Pass : Status::Fail;
  w.message = have ? fmt::format("fp32 LoRA weights after step {}, 1 GPU vs {} GPUs: relative L2 error {:.2e} "
                                 "(tolerance {}, equivalence.h says why); of the updates since the initial values: {:.2e} "
                                 "(not judged: AdamW's first steps move each weight by about lr whatever its "
                                 "gradient's size, so a near-zero gradient's sign weighs as much as a large one's)",
                                 steps, W, weight_err, kEquivalenceWeightTolerance, update_err)
                   : missing;
  log_rank0("fsdp-lora: equivalence LoRA gradients {} ({:.2e}), weights {} ({:.2e}; updates {:.2e})",
            to_string(g.status), grad_err, to_string(w.status), weight_err, update_err);
}

void FsdpSummary::record_replicas(const std::vector<float>& lora) {
  train::record_replicas(ctx_.world, ctx_.results, lora, "fsdp-lora", "LoRA weights", "fp32 values");
}

void FsdpSummary::record_memory(const MemoryPlan& plan, const FsdpRun& run, double model_bytes, double weights_bytes) {
  std::size_t free = 0, total = 0;
  GPUACCEPT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  ResultWriter& out = ctx_.results;
  Params p = shape_params();
  p["gpus"] = std::to_string(plan.world_size);
  out.measure("memory", "planned_gib", static_cast<double>(plan.total()) / kGiB, "GiB", p).message =
      "memory_plan.h's figure for this rank (shards, gather buffers, LoRA and AdamW state, activations, workspaces, "
      "NCCL allowance)";
  out.measure("memory", "base_shards_gib", static_cast<double>(plan.base_shards_gpu) / kGiB, "GiB", p).message =
      "this rank's shards of the frozen base (base / N)";
  const double peak = std::max(run.peak_used_bytes, static_cast<double>(total - free));
  Record& r = out.measure("memory", "peak_used_gib", peak / kGiB, "GiB", p);
  r.message = fmt::format(
      "device memory in use (cudaMemGetInfo, CUDA context and NCCL included) at the busiest step end, of {:.1f} GiB; "
      "planned {:.2f} GiB; allocated by the model {:.2f} GiB and the sharded weights {:.2f} GiB",
      static_cast<double>(total) / kGiB, static_cast<double>(plan.total()) / kGiB, model_bytes / kGiB,
      weights_bytes / kGiB);
  out.measure("memory", "device_used_gib", static_cast<double>(total - free) / kGiB, "GiB", p);
  log_rank0("fsdp-lora: memory: peak {:.2f} GiB in use, planned {:.2f} GiB", peak / kGiB,
            static_cast<double>(plan.total()) / kGiB);
}

}  // namespace gpuaccept::fsdp
