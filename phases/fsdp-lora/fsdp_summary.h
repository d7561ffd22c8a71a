// From the fsdp-lora training run to result records, named as ddp's (run_summary.h) so the
// report and the thresholds treat both phases alike: loss_curve, finite, learning, replicas,
// throughput (tokens_per_s, tokens_per_s_per_gpu, tokens_per_s_total), step_time, mfu; and the
// phase's own: gather (all-gather time, exposed wait, hidden share, bandwidth) and memory
// (planned vs measured). Methods marked collective gather through World: every rank calls them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fsdp-lora/fsdp_config.h"
#include "fsdp-lora/fsdp_trainer.h"
#include "fsdp-lora/memory_plan.h"
#include "phase/phase_runner.h"

namespace gpuaccept::fsdp {

class FsdpSummary {
 public:
  FsdpSummary(PhaseContext& ctx, const FsdpConfig& config, std::string gpu_name, std::optional<double> loss_floor);

  void record_training(const FsdpRun& run);                // collective
  void record_replicas(const std::vector<float>& lora);    // collective
  void record_memory(const MemoryPlan& plan, const FsdpRun& run, double model_bytes, double weights_bytes);

 private:
  PhaseContext& ctx_;
  const FsdpConfig& config_;
  std::string gpu_name_;
  std::optional<double> loss_floor_;

  void record_throughput(const FsdpRun& run);  // collective
  double tokens_per_step() const;              // this rank's tokens per optimizer step
  // model, layers, seq_len and micro_batch: what a throughput or memory threshold keys on
  // beside gpus (the quick profile's 4 layers and the full one's 28 are different figures).
  Params shape_params() const;
};

}  // namespace gpuaccept::fsdp
