// The smoke phase body: Slurm, binding, shared filesystem, GPU health, GEMM, memory,
// host-device and peer bandwidth, sustained load, in that order, one progress line
// per step from rank 0 and a checkpoint of the records after each.
//
// Every rank runs the same sequence of World collectives whatever happens on its GPU:
// each step catches its own exceptions (an ERROR record naming the test) and steps
// are separated by barriers, so one broken GPU cannot leave the other ranks waiting
// in a collective it never reaches.
#pragma once

#include "phase/phase_runner.h"

namespace gpuaccept::smoke {

struct SmokeOptions {
  // Only the GPU-to-GPU matrix, by local rank 0 of each node over all GPUs it sees:
  // for a step with one task per node that Slurm gives all the node's GPUs.
  bool peer_matrix = false;
};

void run_smoke(PhaseContext& ctx, const SmokeOptions& opts);

// The `smoke.*` config keys and their defaults, for --help.
std::string config_help();

}  // namespace gpuaccept::smoke
