// The scaling records' second figure. Scaling efficiency is tokens/s per GPU at scale over the
// mean of each GPU alone; but GPUs in lockstep all step at the pace of the slowest, so part of
// the loss can be one slow card rather than communication. On four H200s (2026-11-26) the GPUs
// alone spread over 2.3% (513.6k to 525.5k), and the full pipeline's ddp read 93.0% against the
// mean where it was 94.2% of the slowest. Naming that GPU, and the efficiency against it, tells
// an operator which of the two to look at: the GPUs' spread, or communication and what comes
// with it (kernels slowed beside it, ranks arriving at each step apart).
// Only for the `all` scale: a `node` scale's rate is the mean over nodes, each at the pace of
// its own slowest GPU, so one slowest GPU of all would overstate it.
#pragma once

#include <string>
#include <vector>

#include "results/result_writer.h"
#include "world/world.h"

namespace gpuaccept::train {

struct SlowestAlone {
  double rate = 0;  // tokens/s of the slowest GPU alone
  int rank = -1;    // its rank; -1 when there was no rate
};

// The lowest finite rate of `rates`: every rank's values in rank order, as gather_doubles
// (run_records.h) returns them, the rate first. Rank -1 for none.
SlowestAlone slowest_alone(const std::vector<std::vector<double>>& rates);

// ", the slowest GPU alone: rank R on HOST at RATE, of which this is P%", or "" with only one
// rate or none (nothing to compare). `host` names the slowest rank's node.
std::string slowest_alone_note(const SlowestAlone& slowest, std::size_t ranks, double per_gpu_at_scale,
                               const std::string& host);
// The same with the host taken from `world`'s placement of the ranks.
std::string slowest_alone_note(const SlowestAlone& slowest, const World& world, double per_gpu_at_scale);

// Rank 0, beside the `all` scale's scaling/efficiency record: scaling/efficiency_vs_slowest
// (%), the same tokens/s per GPU against the slowest GPU alone, under the same params, so the
// report charts both. Nothing with one rank, no rate or a rate that is not finite.
void record_vs_slowest(ResultWriter& out, const SlowestAlone& slowest, const World& world, double per_gpu_at_scale,
                       const Params& params);

}  // namespace gpuaccept::train
