// The records both training phases (ddp, fsdp-lora) write the same way after a training run:
// the loss curve averaged over ranks with its finiteness check, the replica check and the
// step figures. One implementation, so the report reads one meaning for each record name.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hw/gpu_sample_summary.h"
#include "results/result_writer.h"
#include "train/step_timing.h"
#include "world/world.h"

namespace gpuaccept::train {

// Every rank's vector of doubles (same length on every rank). Collective.
std::vector<std::vector<double>> gather_doubles(World& world, const std::vector<double>& mine);

// Element-wise mean over the ranks of each rank's per-step values (NaN-padded to the planned
// length on a rank whose run stopped early, so the mean is NaN there too). Collective.
std::vector<double> mean_over_ranks(World& world, const std::vector<double>& mine);

// Rank 0: the finite losses as loss_curve records, and the "finite" check: the first step
// where the mean loss is not finite, or where any rank saw NaN or Inf in its loss or gradient
// norm (first_nonfinite_step gathered per rank, 0 for none), fails it. Returns the number of
// steps before that (losses.size() when all are finite).
std::size_t record_loss_curve(ResultWriter& out, const std::vector<double>& losses,
                              const std::vector<std::vector<double>>& first_nonfinite_step);

// Collective: every rank's weights_hash of `weights`; rank 0 records "replicas" (PASS when all
// are bitwise identical) and logs it as "<phase>: replicas ...". `what` names the weights
// ("weights", "LoRA weights") and `values` what is hashed ("values", "fp32 values").
void record_replicas(World& world, ResultWriter& out, const std::vector<float>& weights, const std::string& phase,
                     const std::string& what, const std::string& values);

// Rank 0: throughput per GPU and in total, and each median step time, under `scale`.
void record_step_figures(ResultWriter& out, double per_gpu, double total, const StepRecord& median,
                         const Params& scale);

// What a GPU's throughput record says of the clocks it ran at over the run's timed steps (the
// trainers' NvmlSampler): "this GPU over the 55 timed steps: SM clock 1485-1980 MHz (median
// 1650), ...", or why there is nothing to say. At a power cap these set the figure.
std::string timed_gpu_note(const GpuSampleSummary& gpu, std::size_t timed_steps);

}  // namespace gpuaccept::train
