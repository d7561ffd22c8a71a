// One training step's loss and timings, and their medians over a run: the figures both
// training phases (ddp, fsdp-lora) record as tokens/s and step_time, computed the same way
// so the two phases' numbers compare. Free of CUDA and MPI (tests/unit/train checks it).
#pragma once

#include <vector>

namespace gpuaccept::train {

struct StepRecord {
  int step = 0;             // from 1
  double loss = 0;          // mean over this rank's micro-batches
  double grad_norm = 0;     // global norm before clipping (after the all-reduce)
  // GPU time (CUDA events on the compute stream): tokens/s is computed from step_ms.
  double forward_ms = 0, backward_ms = 0, comm_exposed_ms = 0, optimizer_ms = 0, step_ms = 0;
  // Host time from the step's start (sampling its batches) to its end seen on the host:
  // step_ms plus what the GPU waited for the host, the training loop's real pace.
  double wall_ms = 0;
};

// Medians of each timing over the steps after the first `skip` (warm-up: cuBLASLt plans,
// NCCL connections); at least the last step counts even when skip covers them all.
StepRecord median_step(const std::vector<StepRecord>& steps, int skip);

}  // namespace gpuaccept::train
