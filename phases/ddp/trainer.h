// The training loop: for each optimizer step, forward and backward over each micro-batch
// (gradients accumulate), the gradient buckets all-reduced while backward runs
// (gpu/gradient_sync.h), then global-norm clipping and AdamW, all on the GPU with one
// host wait per step. Every wait is bounded (RankRuntime in src/cuda/rank_runtime.h:
// deadline, NCCL async errors, other ranks' abort notices), so a dead or hung rank ends the
// run with a Fault instead of a hang.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nccl.h>

#include "common/debug_fault.h"
#include "cuda/cuda_handles.h"
#include "ddp/ddp_config.h"
#include "ddp/gpu/gpt_model.h"
#include "ddp/gpu/gradient_sync.h"
#include "ddp/gpu/model_graphs.h"
#include "hw/gpu_sample_summary.h"
#include "hw/nvml.h"
#include "train/clipped_adamw.h"
#include "train/step_timing.h"
#include "train/training_checkpoint.h"
#include "train/token_source.h"
#include "cuda/rank_runtime.h"

namespace gpuaccept::ddp {

using train::StepRecord;  // a step's loss and timings, as fsdp-lora records them too

struct TrainRun {
  std::string label;
  int comm_size = 1;  // GPUs averaging gradients together
  std::vector<StepRecord> steps;
  int first_nonfinite_step = 0;  // 0: every loss and gradient norm was finite
  std::string engine = "none";   // how its gradients were averaged: "NCCL", "copy engine", "none" (alone)
  GpuSampleSummary gpu;  // what NVML showed of this rank's GPU over the timed steps (no samples without NVML)
};

struct TrainSpec {
  std::string label;        // "all", "node", "single_gpu", "equivalence"
  ncclComm_t comm = nullptr;  // gradients averaged over it; nullptr: alone
  std::vector<int> comm_ranks;  // world ranks in comm, for messages
  int steps = 1;
  std::vector<int> shards;  // data shards, one micro-batch each per optimizer step
  bool log_progress = false;
  const DebugFault* fault = nullptr;  // injected into this run (tests/gpu fault tests); nullptr: none
  // The steps run are first_step .. steps (data and learning rate follow the step number).
  // resume: the run continues from the state in place (restored from a checkpoint) instead
  // of the initial weights and fresh AdamW moments.
  int first_step = 1;
  bool resume = false;
  std::function<void(int step)> after_step = {};  // called after each step's end (host waited); may be empty
};

class Trainer {
 public:
  // `init`: the initial master weights (layout of model.layout()); every run starts there
  // with fresh AdamW state. max_micro: the most micro-batches any run will ask for.
  // nvml_gpu: this rank's GPU in NVML, sampled over each run's timed steps (none: not sampled).
  Trainer(gpu::GptModel& model, const DdpConfig& config, const train::TokenSource& data, RankRuntime& runtime,
          std::vector<float> init, int max_micro, std::optional<Nvml::Device> nvml_gpu = std::nullopt);

  TrainRun run(const TrainSpec& spec);
  // The run in progress or last run, step by step: after a Fault, what was completed.
  const TrainRun& progress() const { return current_; }

  // This rank's master weights, copied to the host (after a run).
  std::vector<float> master_weights();
  // The state a training checkpoint holds: fp32 master weights and AdamW's moments.
  std::vector<train::DeviceStateTensor> state();
  // After the state was written in place (a restore): the bf16 weights made from the master.
  void state_restored();
  // The copy-engine all-reduce on `comm` (gpu/gradient_sync.h): collective, "" or why not.
  std::string use_copy_engine(ncclComm_t comm, int rank, int world) { return sync_.use_copy_engine(comm, rank, world); }
  // Collective: no rank copies out of another's buckets once it returns (before they are freed).
  void stop_copy_engine() { sync_.stop_copy_engine(); }

 private:
  gpu::GptModel& model_;
  const DdpConfig& config_;
  const train::TokenSource& data_;
  RankRuntime& runtime_;
  std::vector<float> init_;
  int max_micro_;
  TrainRun current_;
  int device_sms_ = 0;  // multiprocessors of this rank's GPU
  std::optional<Nvml::Device> nvml_gpu_;

  CudaStream stream_;
  gpu::ModelGraphs graphs_;  // ddp.cuda_graph: the passes replayed, in a job of one GPU
  gpu::GradientSync sync_;
  train::ClippedAdamW optimizer_;     // global norm, clipping, AdamW state (num_params)
  train::DecaySpans decay_spans_;     // where AdamW decays: the matrices and embeddings
  PinnedBuffer<int> staging_;          // 2 (odd and even steps) x max_micro x (tokens, targets)
  PinnedBuffer<float> host_losses_;    // max_micro x B*T
  std::vector<std::unique_ptr<CudaEvent>> fwd_start_, fwd_end_, bwd_end_;
  CudaEvent step_start_, comm_joined_, step_end_;

  StepRecord step(const TrainSpec& spec, int step_index);
  void stage(const TrainSpec& spec, int step_index);
  int* staged(int step_index) const;  // that step's half of staging_
  void optimizer_step(int t);
};

}  // namespace gpuaccept::ddp
