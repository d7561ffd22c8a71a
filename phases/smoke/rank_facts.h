// What each rank knows about itself that other ranks' checks need: host and Slurm
// node name, CPU affinity, the GPU it uses and the GPUs it and NVML see. Every rank
// builds its own, World::allgather_string shares them once (as JSON), and rank 0
// evaluates the job-wide checks (Slurm GRES per node, GPU sharing, CPU overlap).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuaccept::smoke {

struct RankFacts {
  int rank = 0;
  std::string host;        // hostname (World's node name)
  std::string slurm_node;  // SLURMD_NODENAME, else the hostname
  int local_rank = 0;
  std::string cpus;        // allowed CPUs, "0-3,8"
  int cuda_visible = 0;    // CUDA devices this rank sees
  int gpu_index = -1;      // the one it uses, numbered on its node (GpuDevice::node_index); -1: none
  std::string gpu_uuid, gpu_bus_id, gpu_reason;  // reason: why no GPU
  std::vector<std::string> visible_uuids;
  int nvml_gpus = 0;       // GPUs NVML sees on the node (all of them, not only this rank's)
  std::string nvml_reason;
  std::optional<int> gpu_numa;  // NUMA node of the used GPU
  std::string gpu_numa_cpus;    // that NUMA node's CPUs (hwloc), "" when unknown
};

void to_json(nlohmann::json& j, const RankFacts& f);
void from_json(const nlohmann::json& j, RankFacts& f);

}  // namespace gpuaccept::smoke
