// What Slurm told this process through its environment. Pure data: the discover
// and smoke phases record it, ResultWriter stamps job ids on every record.
#pragma once

#include <string>

#include "results/run_dir.h"

namespace gpuaccept {

struct SlurmEnv {
  std::string job_id, array_job_id, array_task_id, step_id, proc_id, local_id, node_id;
  std::string job_name, partition, reservation, nodelist, step_nodelist, num_nodes, ntasks, cpus_per_task, cpus_on_node;
  std::string mem_per_node, mem_per_cpu;
  std::string job_gpus, step_gpus, gpus_on_node, gpus_per_node, gpus_per_task, gres;
  std::string cuda_visible_devices, gpu_device_ordinal;
  std::string cluster_name;

  bool in_job() const { return !job_id.empty(); }
  static SlurmEnv from(const EnvLookup& env);
  static SlurmEnv from_process() { return from(process_env()); }
};

// Number of GPUs Slurm gave this job on this node, or -1 when it did not say:
// SLURM_GPUS_ON_NODE, else the count of SLURM_JOB_GPUS ("0,1,2,3").
int slurm_gpus_on_node(const SlurmEnv& env);

// Counts entries of a comma list with ranges: "0-3,6" -> 5, "" -> 0.
int count_index_list(const std::string& list);

// The Slurm release this binary was built against ("22.05.8"), and the API version
// of the libslurm it runs with ("38.0.0"), which changes with each major release.
std::string slurm_version_compiled();
std::string slurm_api_version_runtime();

}  // namespace gpuaccept
