// The nccl-scaling phase body. Every rank runs the same sequence of steps (one step = one
// table row: a collective, dtype and size at one scale; or one round of pairwise tests),
// in lockstep: after each step a one-element all_reduce on the world communicator, so a
// rank that died or hung is noticed by every rank within a step plus the timeout, and a
// rank that has nothing to do at a scale (inter_node's idle GPUs) never waits longer than
// one step. Faults (RankRuntime's Fault) end the sweep on the rank: communicators aborted, one
// FAIL naming the ranks that did not arrive, an abort notice for the other ranks,
// everything measured so far checkpointed, and a bounded final gather (README.md).
#pragma once

#include "nccl-scaling/options.h"
#include "phase/phase_runner.h"

namespace gpuaccept::nccl_scaling {

void run_nccl_scaling(PhaseContext& ctx, const Options& options);

}  // namespace gpuaccept::nccl_scaling
