// One rank's inventory: where it runs, what Slurm gave it, and the node's CPUs,
// memory, GPUs, links and network ports, as a JSON document (stored per rank in
// discover.h5 under /documents/inventory).
#pragma once

#include <nlohmann/json.hpp>

#include "world/world.h"

namespace gpuaccept::discover {

nlohmann::json collect_rank_inventory(const World& world);

}  // namespace gpuaccept::discover
