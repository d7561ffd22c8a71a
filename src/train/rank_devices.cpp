#include "train/rank_devices.h"
#include "common/json_text.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

namespace gpuaccept::train {

std::vector<RankInfo> exchange_rank_devices(World& world, const RankDevice& device) {
  RankInfo me;
  me.host = world.hostname();
  if (const char* id = std::getenv("NCCL_HOSTID")) me.nccl_host_id = id;
  me.error = device.index < 0 ? device.reason : "";
  me.device = device.index;
  me.name = device.name;
  me.uuid = device.uuid;
  me.pci_bus_id = device.pci_bus_id;
  std::vector<RankInfo> all;
  for (const auto& text : world.allgather_string(json_text(nlohmann::json(me))))
    all.push_back(nlohmann::json::parse(text).get<RankInfo>());
  return all;
}

}  // namespace gpuaccept::train
