// Each rank's GPU (or why it has none), gathered through World before a training phase
// (ddp, fsdp-lora) decides anything: every rank takes part, with a GPU or not, so all of
// them decide the same (one rank going on alone would wait for the others in NCCL's init).
#pragma once

#include <vector>

#include "cuda/rank_device.h"
#include "cuda/rank_info.h"
#include "world/world.h"

namespace gpuaccept::train {

// Collective over `world`: element r is rank r's device, its error non-empty when it has none.
std::vector<RankInfo> exchange_rank_devices(World& world, const RankDevice& device);

}  // namespace gpuaccept::train
