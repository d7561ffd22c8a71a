#include "discover/inventory.h"

#include "cuda/library_versions.h"
#include "cuda/nccl_comm.h"
#include "hw/gpu_inventory.h"
#include "hw/gpudirect.h"
#include "hw/host_inventory.h"
#include "hw/rdma_ports.h"
#include "slurm/slurm_env.h"

namespace gpuaccept::discover {

nlohmann::json collect_rank_inventory(const World& world) {
  const SlurmEnv s = SlurmEnv::from_process();
  const int gres_gpus = slurm_gpus_on_node(s);
  const GpuInventory gpus = read_gpu_inventory();
  std::vector<RdmaPort> ports = read_rdma_ports();
  assign_nearest_gpus(ports, locations_of(gpus.node_gpus));
  const int my_gpu = gpus.visible.empty() ? -1 : gpus.visible.front().cuda_index;
  return {
      {"rank", world.rank()},
      {"local_rank", world.local_rank()},
      {"node_index", world.node_index()},
      {"host", world.hostname()},
      {"kernel", kernel_release()},
      {"cpu_affinity", cpu_affinity_list()},
      {"slurm",
       {{"job_id", s.job_id}, {"array_job_id", s.array_job_id}, {"array_task_id", s.array_task_id},
        {"step_id", s.step_id}, {"proc_id", s.proc_id}, {"local_id", s.local_id}, {"partition", s.partition},
        {"nodelist", s.nodelist}, {"cpus_per_task", s.cpus_per_task}, {"cpus_on_node", s.cpus_on_node},
        {"job_gpus", s.job_gpus}, {"step_gpus", s.step_gpus}, {"gpus_on_node", s.gpus_on_node},
        {"gres_gpus_on_node", gres_gpus}, {"cuda_visible_devices", s.cuda_visible_devices},
        {"gpu_device_ordinal", s.gpu_device_ordinal}}},
      {"cpu", read_cpu_inventory()},
      {"gpus", gpus},
      {"infiniband", ports},  // every RDMA port, InfiniBand and RoCE (the key keeps its first name)
      {"gpudirect", read_gpudirect_support(my_gpu)},
      {"versions",
       {{"nccl", nccl_version()}, {"pmix", pmix_version()}, {"slurm", slurm_version_compiled()},
        {"slurm_api", slurm_api_version_runtime()}, {"world_backend", world.backend()}}},
      // compiled against, loaded, and from where (discover/version_checks.h judges them)
      {"libraries", library_versions()},
  };
}

}  // namespace gpuaccept::discover
