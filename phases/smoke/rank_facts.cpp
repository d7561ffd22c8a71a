#include "smoke/rank_facts.h"

namespace gpuaccept::smoke {

void to_json(nlohmann::json& j, const RankFacts& f) {
  j = {{"rank", f.rank},
       {"host", f.host},
       {"slurm_node", f.slurm_node},
       {"local_rank", f.local_rank},
       {"cpus", f.cpus},
       {"cuda_visible", f.cuda_visible},
       {"gpu_index", f.gpu_index},
       {"gpu_uuid", f.gpu_uuid},
       {"gpu_bus_id", f.gpu_bus_id},
       {"gpu_reason", f.gpu_reason},
       {"visible_uuids", f.visible_uuids},
       {"nvml_gpus", f.nvml_gpus},
       {"nvml_reason", f.nvml_reason},
       {"gpu_numa", f.gpu_numa ? nlohmann::json(*f.gpu_numa) : nlohmann::json()},
       {"gpu_numa_cpus", f.gpu_numa_cpus}};
}

void from_json(const nlohmann::json& j, RankFacts& f) {
  f.rank = j.value("rank", 0);
  f.host = j.value("host", "");
  f.slurm_node = j.value("slurm_node", "");
  f.local_rank = j.value("local_rank", 0);
  f.cpus = j.value("cpus", "");
  f.cuda_visible = j.value("cuda_visible", 0);
  f.gpu_index = j.value("gpu_index", -1);
  f.gpu_uuid = j.value("gpu_uuid", "");
  f.gpu_bus_id = j.value("gpu_bus_id", "");
  f.gpu_reason = j.value("gpu_reason", "");
  f.visible_uuids = j.value("visible_uuids", std::vector<std::string>{});
  f.nvml_gpus = j.value("nvml_gpus", 0);
  f.nvml_reason = j.value("nvml_reason", "");
  if (j.contains("gpu_numa") && j["gpu_numa"].is_number_integer()) f.gpu_numa = j["gpu_numa"].get<int>();
  f.gpu_numa_cpus = j.value("gpu_numa_cpus", "");
}

}  // namespace gpuaccept::smoke
