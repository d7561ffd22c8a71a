// GPU-to-GPU copies within a node, over every ordered pair of the GPUs this process
// sees: bandwidth one way (uni) and both ways at once (bi), and the time of a small
// copy (latency). Under Slurm each task usually sees only its own GPU, so this runs
// where one process sees them all: `gpuaccept-smoke --peer-matrix` in a step with one
// task per node (see main.cpp), or local rank 0 when it happens to see several.
#pragma once

#include <vector>

#include "results/record.h"
#include "smoke/smoke_config.h"

namespace gpuaccept::smoke {

// Records peer_bandwidth (src, dst, mode) and peer_latency (src, dst) for all
// `count` visible devices; leaves the current device as it found it.
std::vector<Record> measure_peer_matrix(int count, const SmokeConfig& cfg);

}  // namespace gpuaccept::smoke
