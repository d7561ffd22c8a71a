// Binding checks: does each rank use its own GPU, see exactly the GPUs Slurm gave it,
// own CPUs no other rank on its node has, and sit near its GPU (NUMA)?
// Pure functions of the gathered RankFacts and the Slurm environment.
#pragma once

#include <vector>

#include "results/record.h"
#include "slurm/slurm_env.h"
#include "smoke/rank_facts.h"

namespace gpuaccept::smoke {

// Per node (rank 0): FAIL naming the ranks and the node when two ranks use one GPU,
// unless `allow_shared` (smoke.allow_shared_gpus).
std::vector<Record> check_gpu_sharing(const std::vector<RankFacts>& all, bool allow_shared);

// Per node (rank 0): ranks' CPU masks must not overlap. With `require_exclusive`
// false (smoke.require_exclusive_cpus), an overlap is a SKIP that names it.
std::vector<Record> check_cpu_overlap(const std::vector<RankFacts>& all, bool require_exclusive);

// This rank: the CUDA devices it sees equal what Slurm gave the task
// (SLURM_GPUS_PER_TASK, else SLURM_STEP_GPUS, else the job's GPUs on the node).
// `gpu_bind`: SLURM_GPU_BIND ("" when unset): with per-task binding, any 1..step count is right.
Record check_gpu_count(const RankFacts& mine, const SlurmEnv& env, const std::string& gpu_bind);

// This rank: its CPUs lie on its GPU's NUMA node. Outside it: FAIL when `require`
// (smoke.require_numa_affinity), else PASS with a message saying so.
Record check_numa_affinity(const RankFacts& mine, bool require);

}  // namespace gpuaccept::smoke
