// Whether what the fsdp-lora phase is about to allocate fits, decided on every rank at once:
// each rank measures its own GPU (or host) and every rank learns every verdict (World's
// allgather), so all stop or all go on together, and the refusal names each rank short of
// room with its figures.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "world/world.h"

namespace gpuaccept::fsdp {

// Collective: every rank's reason (`mine`, "" for none), as "rank R<separator>reason" for the
// ranks that gave one, in rank order; empty when none did.
std::vector<std::string> reasons_by_rank(World& world, const std::string& mine, std::string_view separator = ": ");

// Collective: "" when `bytes` more fit in every rank's GPU beside headroom_gib (0 bytes always
// fit), else "`what` does not fit: rank R needs … GiB free of …".
std::string gpu_room_for(World& world, std::uint64_t bytes, double headroom_gib, const std::string& what);

// Collective: the same for pinned host memory, where every rank of a node pins `bytes` at once:
// their sum beside headroom_gib against the kernel's MemAvailable (hw/host_inventory.h).
std::string host_room_for(World& world, std::uint64_t bytes, double headroom_gib, const std::string& what);

}  // namespace gpuaccept::fsdp
