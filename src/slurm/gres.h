// Slurm's GRES strings, as node_info_t.gres and the SLURM_* variables write them.
// Pure parsing, so the smoke phase's "configured GPUs equal visible GPUs" check is
// unit-tested without a controller.
#pragma once

#include <string_view>

namespace gpuaccept {

// GPUs in a node's GRES list: "gpu:h200:8(S:0-1)" -> 8, "gpu:4,nic:2" -> 4,
// "gpu:a100:2,gpu:v100:1" -> 3, "gpu" -> 1, "" / "(null)" / "nic:2" -> 0.
// A malformed count counts as 0 GPUs of that entry.
int gres_gpu_count(std::string_view gres);

// A per-task or per-node GPU request as Slurm exports it ("2", "h200:2"); -1 when
// empty or not a number.
int gpu_request_count(std::string_view request);

}  // namespace gpuaccept
