// Slurm checks through libslurm, made by rank 0 only (one RPC per query for the
// whole job): the controller answers, the job's partition is UP, no node of the
// allocation is DOWN/DRAIN/FAIL, and each node's configured GPU GRES equals the GPUs
// NVML sees there. Outside a Slurm job every check is a SKIP saying so.
#pragma once

#include <string>
#include <vector>

#include "results/record.h"
#include "slurm/slurm_api.h"
#include "slurm/slurm_env.h"
#include "smoke/rank_facts.h"

namespace gpuaccept::smoke {

// Rank 0: every controller check, as job-level records (node = the Slurm node name).
std::vector<Record> controller_checks(const SlurmEnv& env, const std::vector<RankFacts>& all);

// Pure parts, unit-tested.
Record evaluate_node_state(const SlurmNode& node);
Record evaluate_partition(const std::string& name, const std::optional<SlurmPartition>& p);
// `gres`: the node's configured GRES; `nvml_gpus`/`nvml_reason`: what NVML found there.
Record evaluate_gres(const std::string& node, const std::string& gres, int nvml_gpus, const std::string& nvml_reason);

}  // namespace gpuaccept::smoke
