// The arithmetic behind the ddp phase's records, kept free of CUDA and MPI so the unit
// tests (tests/unit/ddp) check it: per-step timings and their medians, the weight hash
// the replica check compares, the GPU peak MFU divides by, the learning threshold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuaccept::ddp {

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

// Dense bf16 tensor-core peak of a GPU by its name (H100/H200 989.4 TFLOP/s, ...); 0 when unknown.
double bf16_peak_tflops(const std::string& gpu_name);

// FNV-1a over the weights' bytes, 8 at a time: equal weights give equal hashes, and any
// flipped bit changes it.
std::uint64_t weights_hash(const std::vector<float>& weights);

// The learning check's bound: ln(vocab) - fraction * (ln(vocab) - floor), i.e. the loss must
// have covered `fraction` of the way from a uniform guess down to the data's floor.
double learning_threshold(int vocab, double floor, double fraction);

}  // namespace gpuaccept::ddp
