// The ddp phase from start to end, on every rank:
//   1. gradient check: the GPU model against the float64 CPU reference (tiny model);
//   2. training on all GPUs (the figures, the learning check, no NaN/Inf);
//   3. replicas: every rank's weights hashed and compared bit for bit;
//   4. equivalence: rank 0 alone replays every rank's data as gradient accumulation and
//      must follow the same loss curve;
//   5. scaling: the same per-GPU batch trained by each GPU alone and by each node, so
//      tokens/s per GPU at 1 GPU, one node and all nodes come from one job.
// A rank that dies or hangs ends it through RankRuntime (src/cuda/rank_runtime.h:
// deadlines, abort notices, watchdog); what was measured is kept and the failure recorded.
#pragma once

#include "ddp/ddp_config.h"
#include "phase/phase_runner.h"

namespace gpuaccept::ddp {

void run_ddp_phase(PhaseContext& ctx, const DdpConfig& config);

}  // namespace gpuaccept::ddp
