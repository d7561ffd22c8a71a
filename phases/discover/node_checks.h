// The discover phase's checks, computed by rank 0 from every rank's inventory:
//  - gpus_per_node: the GPUs expected on each node (config, else the job's GRES) are there;
//  - nodes_alike: GPU model, driver, CUDA and NCCL versions agree; the odd node is named.
// Pure functions of the inventories, so they are unit-tested without a cluster.
#pragma once

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/record.h"

namespace gpuaccept::discover {

// `expected_from_config`: discover.expected_gpus_per_node, when set.
std::vector<Record> check_gpus_per_node(const std::vector<nlohmann::json>& inventories,
                                        std::optional<int> expected_from_config);

std::vector<Record> check_nodes_alike(const std::vector<nlohmann::json>& inventories);

// What one rank found, as measurements: its visible GPU count, and per GPU its memory
// (tagged with index and UUID, so the report can place every GPU on the grid).
std::vector<Record> rank_records(const nlohmann::json& inventory);

}  // namespace gpuaccept::discover
