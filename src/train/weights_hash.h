// The hash the replica check compares (ddp: every weight, fsdp-lora: the LoRA weights):
// replicas that stepped identically hold identical bits, so one 64-bit value per rank is
// enough to gather instead of the weights.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuaccept::train {

// FNV-1a over the weights' bytes, 8 at a time: equal weights give equal hashes, and any
// flipped bit changes it.
std::uint64_t weights_hash(const std::vector<float>& weights);

}  // namespace gpuaccept::train
