// Did the step get the CPUs and memory it asked for? Per rank (CPUs) and per node
// (memory), from the Slurm environment, the CPU affinity and the cgroup limits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "results/record.h"
#include "results/run_dir.h"
#include "slurm/slurm_env.h"

namespace gpuaccept::smoke {

// SLURM_CPUS_PER_TASK against the CPUs this rank may run on.
Record check_cpus_per_task(const SlurmEnv& env, int allowed_cpus, const std::string& cpu_list);

// The memory the job asked for on this node, in bytes: SLURM_MEM_PER_NODE, else
// SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE, else SLURM_MEM_PER_GPU x the node's GPUs.
struct MemoryRequest {
  std::uint64_t bytes = 0;
  std::string source;  // "SLURM_MEM_PER_NODE=4000"
};
std::optional<MemoryRequest> requested_memory(const EnvLookup& env);

// What this process can use: the tightest cgroup limit on its path (v2 memory.max,
// v1 memory.limit_in_bytes), and the node's physical memory.
struct MemoryAvailable {
  std::optional<std::uint64_t> cgroup_bytes;
  std::string cgroup_file;  // where the limit came from
  std::uint64_t physical_bytes = 0;
};
MemoryAvailable available_memory();
// The cgroup v2 path from /proc/self/cgroup text ("0::/slurm/job_5/step_0" -> "/slurm/job_5/step_0"), "" if none.
std::string cgroup_v2_path(const std::string& proc_self_cgroup);
// The v1 memory controller's path ("4:memory:/slurm/uid_0/job_5" -> "/slurm/uid_0/job_5"), "" if none.
std::string cgroup_v1_memory_path(const std::string& proc_self_cgroup);

Record check_memory(const std::optional<MemoryRequest>& req, const MemoryAvailable& avail, bool in_job);

}  // namespace gpuaccept::smoke
