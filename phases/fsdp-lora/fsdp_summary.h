// From the fsdp-lora training run to result records, named as ddp's (run_summary.h) so the
// report and the thresholds treat both phases alike: loss_curve, finite, learning, replicas,
// throughput (tokens_per_s, tokens_per_s_per_gpu, tokens_per_s_total), step_time, mfu; and the
// phase's own: gather (all-gather time, exposed wait, hidden share, bandwidth) and memory
// (planned vs measured); equivalence (one GPU replaying every rank's batches vs the all-GPU run)
// and scaling (tokens/s per GPU at each scale against each GPU alone). Methods marked collective
// gather through World: every rank calls them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cuda/rank_device.h"
#include "fsdp-lora/fsdp_config.h"
#include "fsdp-lora/fsdp_trainer.h"
#include "fsdp-lora/memory_plan.h"
#include "phase/phase_runner.h"
#include "train/slowest_alone.h"

namespace gpuaccept::fsdp {

class FsdpSummary {
 public:
  // device: this rank's GPU, named by the per-GPU records (its model name for the MFU's peak).
  FsdpSummary(PhaseContext& ctx, const FsdpConfig& config, RankDevice device, std::optional<double> loss_floor);

  void record_training(const FsdpRun& run);                // collective
  void record_replicas(const std::vector<float>& lora);    // collective
  void record_memory(const MemoryPlan& plan, const FsdpRun& run, double model_bytes, double weights_bytes);
  // Rank 0: the single-GPU replay (solo, its LoRA state after its last step: replay) against the
  // all-GPU run's first steps (record_training's mean losses; sharded: rank 0's snapshot of the
  // all-GPU run after the same step); init: the LoRA values both started from. Records
  // `equivalence` max_loss_diff, lora_grad_rel_err and lora_weight_rel_err. Other ranks: nothing.
  void record_equivalence(const FsdpRun& solo, const LoraSnapshot& replay, const LoraSnapshot& sharded,
                          const std::vector<float>& init, int steps);
  // A scaling run (single_gpu, node): its throughput records as the all-GPU run's (collective).
  void record_scale(const FsdpRun& run);
  // Rank 0: `scaling` efficiency (%) from single_gpu to node and all, from the runs recorded.
  void record_scaling();

 private:
  PhaseContext& ctx_;
  const FsdpConfig& config_;
  RankDevice device_;
  std::optional<double> loss_floor_;
  std::vector<double> losses_;                  // the all-GPU run's mean loss per step (every rank)
  std::map<std::string, double> per_gpu_rate_;  // rank 0: tokens/s per GPU by scale
  std::map<std::string, int> gpus_;             // rank 0: GPUs per communicator by scale
  train::SlowestAlone slowest_alone_;             // rank 0: the slowest GPU of the single_gpu scale

  void record_throughput(const FsdpRun& run);  // collective
  double tokens_per_step() const;              // this rank's tokens per optimizer step
  // model, layers, seq_len and micro_batch: what a throughput or memory threshold keys on
  // beside gpus (the quick profile's 4 layers and the full one's 28 are different figures).
  Params shape_params() const;
};

}  // namespace gpuaccept::fsdp
