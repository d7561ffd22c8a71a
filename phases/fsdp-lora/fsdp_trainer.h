// The fsdp-lora training loop: for each optimizer step, grad_accum micro-batches of the data
// through the model (forward, per-layer recompute and backward, with the frozen base gathered
// layer by layer by FsdpWeights), the LoRA gradients all-reduced across the ranks, global-norm
// clipping and AdamW on the fp32 LoRA master (ddp's kernels, which also refresh the bf16 copy).
// One host wait per step, bounded by RankRuntime (deadline, NCCL async errors, other ranks'
// abort notices), so a dead or hung rank ends the run with a Fault instead of a hang.
//
// Gradient averaging: each micro-batch's backward is scaled by 1 / (grad_accum x N) (the model's
// loss_scale), so one ncclAllReduce sum over the N ranks leaves the mean gradient of all N x
// grad_accum micro-batches, on every rank the same bits (replicas stay bitwise equal). The
// all-reduce runs on FsdpWeights' communication stream after the last backward: the gathers and
// it are one ordered sequence on the one communicator.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nccl.h>

#include "common/debug_fault.h"
#include "cuda/cuda_handles.h"
#include "cuda/rank_runtime.h"
#include "fsdp-lora/fsdp_config.h"
#include "fsdp-lora/gpu/fsdp_weights.h"
#include "fsdp-lora/gpu/qwen_model.h"
#include "train/clipped_adamw.h"
#include "train/step_timing.h"
#include "train/token_source.h"

namespace gpuaccept::fsdp {

struct FsdpStepRecord {
  train::StepRecord time;  // loss, grad norm, forward/backward/exposed all-reduce/optimizer/step ms, wall ms
  double gather_ms = 0;          // all-gathers' time on the communication stream this step
  double gather_exposed_ms = 0;  // of which the compute stream waited
  double gather_bytes = 0;
  int gathers = 0;
};

struct FsdpRun {
  std::string label;
  int comm_size = 1;
  std::vector<FsdpStepRecord> steps;
  int first_nonfinite_step = 0;  // 0: every loss and gradient norm was finite
  double peak_used_bytes = 0;    // device memory in use (cudaMemGetInfo) at the end of the busiest step
};

struct FsdpTrainSpec {
  std::string label = "all";
  ncclComm_t comm = nullptr;    // the ranks sharing the base and averaging gradients; nullptr: alone
  std::vector<int> comm_ranks;  // world ranks in comm, for messages
  int rank_in_comm = 0;
  int steps = 1;
  bool log_progress = false;
  const DebugFault* fault = nullptr;
};

class FsdpTrainer {
 public:
  // lora_init: the initial fp32 LoRA values (model.lora_layout()); every run starts there with
  // fresh AdamW state.
  FsdpTrainer(gpu::QwenLoraModel& model, gpu::FsdpWeights& weights, const FsdpConfig& config,
              const train::TokenSource& data, RankRuntime& runtime, std::vector<float> lora_init);

  FsdpRun run(const FsdpTrainSpec& spec);
  const FsdpRun& progress() const { return current_; }  // after a Fault: what was completed
  std::vector<float> lora_master();                      // this rank's fp32 LoRA values (synchronizes)

 private:
  gpu::QwenLoraModel& model_;
  gpu::FsdpWeights& weights_;
  const FsdpConfig& config_;
  const train::TokenSource& data_;
  RankRuntime& runtime_;
  std::vector<float> init_;
  FsdpRun current_;

  CudaStream stream_;
  train::ClippedAdamW optimizer_;        // global norm, clipping, AdamW state (lora total)
  PinnedBuffer<float> host_losses_;      // (grad_accum, B*T)
  std::vector<std::unique_ptr<CudaEvent>> micro_start_, micro_end_;
  CudaEvent step_start_, backward_done_, reduced_, comm_joined_, step_end_;
  // This step's micro-batches, (grad_accum, 2, B*T) tokens then targets, pinned so the model's
  // uploads are truly asynchronous (a pageable copy can hold the host until the stream gets
  // there, outside RankRuntime's bounded waits); rewritten only after the step's end was waited for.
  PinnedBuffer<int> staging_;

  FsdpStepRecord step(const FsdpTrainSpec& spec, int step_index);
  void optimizer_step(int t);
};

}  // namespace gpuaccept::fsdp
