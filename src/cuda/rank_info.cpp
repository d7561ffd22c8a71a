#include "cuda/rank_info.h"

#include <map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpuaccept {

using nlohmann::json;

void to_json(json& j, const RankInfo& r) {
  j = {{"host", r.host},           {"nccl_host_id", r.nccl_host_id}, {"error", r.error},
       {"device", r.device},       {"node_index", r.node_index},     {"name", r.name},  {"uuid", r.uuid},
       {"pci_bus_id", r.pci_bus_id}, {"mem_free", r.mem_free},        {"mem_total", r.mem_total},
       {"known", r.links.known},   {"nvml_index", r.links.nvml_index}, {"nvswitch", r.links.nvswitch},
       {"nvlink_peers", r.links.nvlink_peers}, {"ib", r.links.ib}, {"nearest_ports", r.links.nearest_ports},
       {"gdr_possible", r.links.gdr_possible}, {"ethernet_gbps", r.links.ethernet_gbps}};
}

void from_json(const json& j, RankInfo& r) {
  r.host = j.at("host");
  r.nccl_host_id = j.at("nccl_host_id");
  r.error = j.at("error");
  r.device = j.at("device");
  r.node_index = j.at("node_index");
  r.name = j.at("name");
  r.uuid = j.at("uuid");
  r.pci_bus_id = j.at("pci_bus_id");
  r.mem_free = j.at("mem_free");
  r.mem_total = j.at("mem_total");
  r.links.known = j.at("known");
  r.links.nvml_index = j.at("nvml_index");
  r.links.nvswitch = j.at("nvswitch");
  r.links.nvlink_peers = j.at("nvlink_peers").get<std::vector<int>>();
  r.links.ib = j.at("ib");
  r.links.nearest_ports = j.value("nearest_ports", std::vector<NearPort>{});
  r.links.gdr_possible = j.value("gdr_possible", false);
  r.links.ethernet_gbps = j.value("ethernet_gbps", 0.0);
}

void to_json(json& j, const NearPort& p) { j = {{"name", p.name}, {"gbps", p.gbps}, {"link_layer", p.link_layer}}; }

void from_json(const json& j, NearPort& p) {
  p.name = j.value("name", "");
  p.gbps = j.value("gbps", 0.0);
  p.link_layer = j.value("link_layer", "");
}

GpuSharing find_gpu_sharing(const std::vector<RankInfo>& ranks) {
  GpuSharing out;
  std::map<std::pair<std::string, std::string>, std::vector<int>> by_gpu;  // (host, uuid) -> ranks
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankInfo& x = ranks[r];
    if (x.uuid.empty()) continue;
    for (const int other : by_gpu[{x.host, x.uuid}]) {
      const RankInfo& y = ranks[static_cast<std::size_t>(other)];
      if (out.refused.empty() && x.nccl_host_id == y.nccl_host_id)
        out.refused = fmt::format("ranks {} and {} on {} share GPU {} ({}): bind one GPU per rank (srun --gpus-per-task=1)",
                                  other, r, x.host, x.uuid, x.pci_bus_id);
    }
    by_gpu[{x.host, x.uuid}].push_back(static_cast<int>(r));
  }
  std::vector<std::string> groups;
  for (const auto& [gpu, members] : by_gpu)
    if (members.size() > 1) groups.push_back(fmt::format("ranks {} on {} share GPU {}", fmt::join(members, ","), gpu.first, gpu.second));
  if (!groups.empty())
    out.joined = fmt::format("{}; each rank has its own NCCL_HOSTID, so NCCL joins them over its network transport: the "
                             "figures are not this GPU's or its links' (a test set-up, not an acceptance run)",
                             fmt::join(groups, "; "));
  return out;
}

}  // namespace gpuaccept
