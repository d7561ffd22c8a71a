#include "smoke/rank_facts_collect.h"

#include <cstdlib>
#include <memory>

#include <hwloc.h>

#include "hw/host_inventory.h"
#include "hw/nvml.h"
#include "smoke/cpu_set.h"

namespace gpuaccept::smoke {

std::string numa_node_cpus(unsigned os_index) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return "";
  std::unique_ptr<hwloc_topology, void (*)(hwloc_topology_t)> owner(topo, hwloc_topology_destroy);
  if (hwloc_topology_load(topo) != 0) return "";
  const hwloc_obj_t numa = hwloc_get_numanode_obj_by_os_index(topo, os_index);
  if (!numa || !numa->cpuset) return "";
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, numa->cpuset) < 0 || !text) return "";
  std::string out = text;
  std::free(text);
  return out;
}

RankFacts collect_rank_facts(const World& world, const GpuDevice& gpu) {
  RankFacts f;
  f.rank = world.rank();
  f.host = world.hostname();
  const char* slurmd = std::getenv("SLURMD_NODENAME");
  f.slurm_node = slurmd && *slurmd ? slurmd : world.hostname();
  f.local_rank = world.local_rank();
  f.cpus = format_cpu_list(current_affinity());
  f.cuda_visible = gpu.visible;
  f.gpu_index = gpu.node_index;
  f.gpu_uuid = gpu.uuid;
  f.gpu_bus_id = gpu.bus_id;
  f.gpu_reason = gpu.reason;
  f.visible_uuids = gpu.visible_uuids;
  const Nvml& nvml = Nvml::instance();
  f.nvml_gpus = nvml.device_count();
  f.nvml_reason = nvml.available() ? "" : nvml.reason();
  if (gpu.nvml) {
    if (const auto numa = nvml.numa_node(*gpu.nvml)) {
      f.gpu_numa = static_cast<int>(*numa);
      f.gpu_numa_cpus = numa_node_cpus(*numa);
    }
  }
  return f;
}

}  // namespace gpuaccept::smoke
