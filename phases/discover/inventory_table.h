// The inventory as readable tables for the job log (rank 0): ranks, GPUs per node,
// the GPU link matrix (as `nvidia-smi topo -m` shows it) and network ports.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuaccept::discover {

std::string format_inventory_tables(const std::vector<nlohmann::json>& inventories);

}  // namespace gpuaccept::discover
