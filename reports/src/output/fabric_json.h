// summary.json's "fabric": the Fabric section for machines (model/fabric.h).
#pragma once

#include <nlohmann/json.hpp>

#include "model/fabric.h"

namespace gpuaccept::report {

// {"nodes": [{node, status, ports, gpudirect, checks, counters}], "counters": {status, reason,
//  documents, nodes, ports, changes, problems}, "transports": [...], "inter_node_busbw": [...],
//  "latency": [...], "node_pairs": [...], "slowest_node_pair": {...} | null}
nlohmann::json fabric_json(const Fabric& f);

}  // namespace gpuaccept::report
