#include "slurm/slurm_env.h"

#include <sstream>

#include <fmt/format.h>
#include <slurm/slurm.h>

namespace gpuaccept {

SlurmEnv SlurmEnv::from(const EnvLookup& env) {
  auto get = [&](const char* name) {
    const char* v = env(name);
    return v ? std::string(v) : std::string();
  };
  SlurmEnv s;
  s.job_id = get("SLURM_JOB_ID");
  s.array_job_id = get("SLURM_ARRAY_JOB_ID");
  s.array_task_id = get("SLURM_ARRAY_TASK_ID");
  s.step_id = get("SLURM_STEP_ID");
  s.proc_id = get("SLURM_PROCID");
  s.local_id = get("SLURM_LOCALID");
  s.node_id = get("SLURM_NODEID");
  s.job_name = get("SLURM_JOB_NAME");
  s.partition = get("SLURM_JOB_PARTITION");
  s.reservation = get("SLURM_JOB_RESERVATION");  // the reservation the job runs in, if any
  s.nodelist = get("SLURM_JOB_NODELIST");
  s.step_nodelist = get("SLURM_STEP_NODELIST");
  s.num_nodes = get("SLURM_JOB_NUM_NODES");
  s.ntasks = get("SLURM_NTASKS");
  s.cpus_per_task = get("SLURM_CPUS_PER_TASK");
  s.cpus_on_node = get("SLURM_CPUS_ON_NODE");
  s.mem_per_node = get("SLURM_MEM_PER_NODE");
  s.mem_per_cpu = get("SLURM_MEM_PER_CPU");
  s.job_gpus = get("SLURM_JOB_GPUS");
  s.step_gpus = get("SLURM_STEP_GPUS");
  s.gpus_on_node = get("SLURM_GPUS_ON_NODE");
  s.gpus_per_node = get("SLURM_GPUS_PER_NODE");
  s.gpus_per_task = get("SLURM_GPUS_PER_TASK");
  s.gres = get("SLURM_JOB_GRES");
  s.cuda_visible_devices = get("CUDA_VISIBLE_DEVICES");
  s.gpu_device_ordinal = get("GPU_DEVICE_ORDINAL");
  s.cluster_name = get("SLURM_CLUSTER_NAME");
  return s;
}

int count_index_list(const std::string& list) {
  int n = 0;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto dash = item.find('-');
    if (dash == std::string::npos) {
      ++n;
    } else {
      try {
        n += std::stoi(item.substr(dash + 1)) - std::stoi(item.substr(0, dash)) + 1;
      } catch (const std::exception&) {
        ++n;  // not numeric (a UUID list): one entry
      }
    }
  }
  return n;
}

int slurm_gpus_on_node(const SlurmEnv& env) {
  if (!env.gpus_on_node.empty()) {
    try {
      return std::stoi(env.gpus_on_node);
    } catch (const std::exception&) {
    }
  }
  if (!env.job_gpus.empty()) return count_index_list(env.job_gpus);
  return -1;
}

std::string slurm_version_compiled() {
  return fmt::format("{}.{:02d}.{}", SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
                     SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
}

std::string slurm_api_version_runtime() {
  const long v = slurm_api_version();
  return fmt::format("{}.{}.{}", SLURM_VERSION_MAJOR(v), SLURM_VERSION_MINOR(v), SLURM_VERSION_MICRO(v));
}

}  // namespace gpuaccept
