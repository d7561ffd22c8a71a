// Builds this rank's RankFacts from the OS (hostname, affinity, SLURMD_NODENAME),
// CUDA (the selected GPU), NVML (GPUs on the node, the GPU's NUMA node) and hwloc
// (that NUMA node's CPUs).
#pragma once

#include "smoke/gpu_device.h"
#include "smoke/rank_facts.h"
#include "world/world.h"

namespace gpuaccept::smoke {

RankFacts collect_rank_facts(const World& world, const GpuDevice& gpu);

// The CPUs of NUMA node `os_index` as hwloc knows them ("0-31"), "" when unknown.
std::string numa_node_cpus(unsigned os_index);

}  // namespace gpuaccept::smoke
