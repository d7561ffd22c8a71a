// The fsdp-lora training loop: for each optimizer step, grad_accum micro-batches of the data
// through the model (forward, per-layer recompute and backward, with the frozen base gathered
// layer by layer by FsdpWeights), the LoRA gradients all-reduced across the ranks, global-norm
// clipping and AdamW on the fp32 LoRA master (src/train's kernels, the ones ddp steps with, which
// also refresh the bf16 copy).
// One host wait per step, bounded by RankRuntime (deadline, NCCL async errors, other ranks'
// abort notices), so a dead or hung rank ends the run with a Fault instead of a hang.
//
// Gradient averaging: each micro-batch's backward is scaled by 1 / (grad_accum x N) (the model's
// loss_scale), so an ncclAllReduce sum over the N ranks leaves the mean gradient of all N x
// grad_accum micro-batches, on every rank the same bits (replicas stay bitwise equal). A run of
// one rank may replay N ranks' micro-batches instead (FsdpTrainSpec::shards, each scaled
// 1 / (N x grad_accum)): the equivalence check's single-GPU side. The
// all-reduce is cut into buckets of consecutive layers (fsdp_lora.bucket_mib, lora_grad_reduce.h),
// each launched on FsdpWeights' communication stream as soon as the last micro-batch's backward
// has finished its layers: the gathers and the reductions are one ordered sequence on the one
// communicator, and only layer 0's bucket is left after the backward. With
// fsdp_lora.grad_reduce: reduce_scatter each bucket is reduced onto the ranks owning its parts
// only, and each rank clips (by the global norm, its square summed over the ranks) and steps
// its own slice, keeping AdamW moments for that slice alone; the updated slices are then
// broadcast, so the replicas stay bitwise equal.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nccl.h>

#include "common/debug_fault.h"
#include "cuda/cuda_handles.h"
#include "cuda/rank_runtime.h"
#include "fsdp-lora/fsdp_config.h"
#include "fsdp-lora/gpu/fsdp_weights.h"
#include "fsdp-lora/gpu/qwen_model.h"
#include "fsdp-lora/lora_grad_reduce.h"
#include "hw/gpu_sample_summary.h"
#include "hw/nvml.h"
#include "train/clipped_adamw.h"
#include "train/step_timing.h"
#include "train/token_source.h"
#include "train/training_checkpoint.h"

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
  std::string gather_engine;  // how the base was gathered (FsdpWeights::gather_engine)
  std::vector<FsdpStepRecord> steps;
  int first_nonfinite_step = 0;  // 0: every loss and gradient norm was finite
  double peak_used_bytes = 0;    // device memory in use (cudaMemGetInfo) at the end of the busiest step
  GpuSampleSummary gpu;  // what NVML showed of this rank's GPU over the timed steps (no samples without NVML)
};

struct FsdpTrainSpec {
  std::string label = "all";    // a run of train/arrival_progress.h: all, equivalence, single_gpu, node
  ncclComm_t comm = nullptr;    // the ranks sharing the base and averaging gradients; nullptr: alone
  std::vector<int> comm_ranks;  // world ranks in comm, for messages
  int rank_in_comm = 0;
  int steps = 1;
  // The data shard of each micro-batch of a step (equivalence.h); empty: rank_in_comm x grad_accum
  // .. + grad_accum - 1. More than grad_accum (at most the trainer's max_micro): gradient
  // accumulation standing for several ranks, each micro-batch scaled 1/(count x ranks in comm).
  std::vector<int> shards;
  // The frozen base for this run (sharded over comm's ranks, or whole with one); nullptr: the one
  // the trainer was built with. Must outlive the run.
  gpu::FsdpWeights* weights = nullptr;
  // After this step (1-based; 0: none), the fp32 LoRA weights are copied to the host
  // (snapshot()), and step 1's reduced gradients with them, for the equivalence check.
  int snapshot_step = 0;
  bool log_progress = false;
  const DebugFault* fault = nullptr;
  // The steps run are first_step .. steps (data, dropout masks and learning rate follow the
  // step number). resume: continue from the LoRA state in place (restored from a checkpoint)
  // instead of lora_init and fresh AdamW moments.
  int first_step = 1;
  bool resume = false;
  std::function<void(int step)> after_step = {};  // after each step's end (host waited); may be empty
};

// A run's LoRA state after one of its steps.
struct LoraSnapshot {
  int step = 0;               // of `lora`; 0: not taken (the run stopped before it)
  std::vector<float> lora;    // fp32 master after `step`, lora_layout()
  int grads_step = 0;         // of `grads` (1); 0: not taken
  std::vector<float> grads;   // step 1's gradients as the optimizer used them (before clipping)
};

class FsdpTrainer {
 public:
  // lora_init: the initial fp32 LoRA values (model.lora_layout()); every run starts there with
  // fresh AdamW state. max_micro: the most micro-batches a step of a run may have (at least
  // grad_accum; a replay of N ranks needs N x grad_accum). weights: the base of runs whose spec
  // names none; the model reads whichever base the run uses (set at each run's start).
  // nvml_gpu: this rank's GPU in NVML, sampled over each run's timed steps (none: not sampled).
  FsdpTrainer(gpu::QwenLoraModel& model, gpu::FsdpWeights& weights, const FsdpConfig& config,
              const train::TokenSource& data, RankRuntime& runtime, std::vector<float> lora_init, int max_micro = 0,
              std::optional<Nvml::Device> nvml_gpu = std::nullopt);

  FsdpRun run(const FsdpTrainSpec& spec);
  const FsdpRun& progress() const { return current_; }  // after a Fault: what was completed
  std::vector<float> lora_master();                      // this rank's fp32 LoRA values (synchronizes)
  const std::vector<float>& lora_init() const { return init_; }
  // The state a training checkpoint holds: the fp32 LoRA master and AdamW's moments.
  std::vector<train::DeviceStateTensor> state();
  // After the state was written in place (a restore): the bf16 LoRA copy made from the master.
  void state_restored();
  // The last run's snapshot (FsdpTrainSpec::snapshot_step).
  const LoraSnapshot& snapshot() const { return snapshot_; }
  // The LoRA gradients' buckets (lora_buckets.h), in the order backward launches them.
  const std::vector<LoraBucket>& grad_buckets() const { return grad_reduce_.buckets(); }

 private:
  gpu::QwenLoraModel& model_;
  gpu::FsdpWeights* default_weights_;
  gpu::FsdpWeights* weights_;  // the running one's
  const FsdpConfig& config_;
  const train::TokenSource& data_;
  RankRuntime& runtime_;
  std::vector<float> init_;
  int max_micro_;
  std::optional<Nvml::Device> nvml_gpu_;
  FsdpRun current_;
  LoraSnapshot snapshot_;

  CudaStream stream_;
  train::ClippedAdamW optimizer_;        // global norm, clipping, AdamW state (moment_elements of the run)
  LoraGradReduce grad_reduce_;           // the LoRA gradients' buckets, reduced during backward
  // fsdp_lora.grad_reduce: reduce_scatter: in a run of several ranks each steps its slice of
  // the flat LoRA buffer (lora_buckets.h's owned_parts) with AdamW moments for that slice only.
  bool scatter_;
  PinnedBuffer<float> host_losses_;      // (max_micro, B*T)
  std::vector<std::unique_ptr<CudaEvent>> micro_start_, micro_end_;
  CudaEvent step_start_, backward_done_, comm_joined_, step_end_;
  CudaEvent to_comm_, from_comm_;  // the compute and communication streams' hand-overs (reduce_scatter)
  // This step's micro-batches, (max_micro, 2, B*T) tokens then targets, pinned so the model's
  // uploads are truly asynchronous (a pageable copy can hold the host until the stream gets
  // there, outside RankRuntime's bounded waits); rewritten only after the step's end was waited for.
  PinnedBuffer<int> staging_;

  FsdpStepRecord step(const FsdpTrainSpec& spec, int step_index);
  // The step's clipping and AdamW: over the whole buffer, or (reduce_scatter, several ranks)
  // over this rank's slice with the norm summed over the ranks, then every rank's updated
  // slice of the fp32 master broadcast from its owner and the bf16 copy made from it.
  void optimizer_step(const FsdpTrainSpec& spec, int t, const WaitContext& ctx);
  // Every rank's slice of `buf` (fp32, the flat layout) from its owner to the others, on the
  // communication stream between the compute stream's work before and after.
  void broadcast_slices(float* buf, const FsdpTrainSpec& spec, const WaitContext& ctx, const char* what);
  // `enqueue`'s collectives on FsdpWeights' communication stream (the one ordered sequence on
  // the communicator), after the compute stream's work so far and before its work after.
  void on_comm_stream(const std::function<void(cudaStream_t)>& enqueue);
  // The AdamW moments a run of `ranks` ranks needs: the whole buffer, or one slice.
  std::size_t moment_elements(int ranks) const;
};

}  // namespace gpuaccept::fsdp
