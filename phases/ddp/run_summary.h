// From training runs to result records: loss curve, learning and finiteness checks,
// throughput and its split (forward, backward, exposed communication, optimizer), MFU,
// replica hashes, the equivalence of one GPU and N, scaling efficiency, memory.
// Methods marked collective gather through World: every rank calls them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cuda/rank_device.h"
#include "ddp/ddp_config.h"
#include "ddp/gpu/gpt_model.h"
#include "ddp/trainer.h"
#include "phase/phase_runner.h"
#include "train/slowest_alone.h"

namespace gpuaccept::ddp {

class RunSummary {
 public:
  // device: this rank's GPU, named by the per-GPU records (its model name for the MFU's peak).
  RunSummary(PhaseContext& ctx, const DdpConfig& config, const gpu::GptModel& model, RankDevice device,
             std::optional<double> loss_floor);

  void record_training(const TrainRun& run);              // collective
  void record_replicas(const std::vector<float>& weights);  // collective
  void record_equivalence(const TrainRun& solo);           // rank 0's solo run; others pass an empty one
  void record_scale(const TrainRun& run);                  // collective
  void record_scaling();                                   // after the scales
  void record_memory();

 private:
  PhaseContext& ctx_;
  const DdpConfig& config_;
  const gpu::GptModel& model_;
  RankDevice device_;
  std::optional<double> loss_floor_;
  std::vector<double> global_losses_;          // the all-GPU run: mean over ranks per step
  std::map<std::string, double> per_gpu_rate_;  // scale -> tokens/s per GPU (mean over ranks)
  std::map<std::string, int> gpus_;             // scale -> GPUs in one communicator
  std::map<std::string, std::string> engines_;  // scale -> how gradients were averaged (TrainRun::engine)
  train::SlowestAlone slowest_alone_;             // rank 0: the slowest GPU of the single_gpu scale

  double tokens_per_step() const;  // this rank's tokens per optimizer step
};

}  // namespace gpuaccept::ddp
