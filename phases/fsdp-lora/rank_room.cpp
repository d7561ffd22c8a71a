#include "fsdp-lora/rank_room.h"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cuda/cuda_check.h"
#include "hw/host_inventory.h"

namespace gpuaccept::fsdp {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double gib(std::uint64_t bytes) { return static_cast<double>(bytes) / kGiB; }

std::string does_not_fit(World& world, const std::string& mine, const std::string& what) {
  const std::vector<std::string> refused = reasons_by_rank(world, mine, " ");
  if (refused.empty()) return "";
  return fmt::format("{} does not fit: {}", what, fmt::join(refused, "; "));
}

}  // namespace

std::vector<std::string> reasons_by_rank(World& world, const std::string& mine, std::string_view separator) {
  const std::vector<std::string> verdicts = world.allgather_string(mine);
  std::vector<std::string> out;
  for (std::size_t r = 0; r < verdicts.size(); ++r)
    if (!verdicts[r].empty()) out.push_back(fmt::format("rank {}{}{}", r, separator, verdicts[r]));
  return out;
}

std::string gpu_room_for(World& world, std::uint64_t bytes, double headroom_gib, const std::string& what) {
  std::size_t free = 0, total = 0;
  GPUACCEPT_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const auto headroom = static_cast<std::uint64_t>(headroom_gib * kGiB);
  std::string mine;
  if (bytes > 0 && bytes + headroom > free)
    mine = fmt::format("needs {:.2f} GiB + {} GiB headroom (fsdp_lora.memory_headroom_gib), {:.2f} GiB free of {:.2f} "
                       "GiB beside the model's buffers",
                       gib(bytes), headroom_gib, gib(free), gib(total));
  return does_not_fit(world, mine, what);
}

std::string host_room_for(World& world, std::uint64_t bytes, double headroom_gib, const std::string& what) {
  std::string mine;
  if (bytes > 0) {
    const std::uint64_t available = memory_available_bytes();
    const auto headroom = static_cast<std::uint64_t>(headroom_gib * kGiB);
    const std::uint64_t node_need = bytes * static_cast<std::uint64_t>(world.local_size());
    if (available == 0 || node_need + headroom > available)
      mine = fmt::format("pins {:.2f} GiB of host memory, {} rank(s) on {}: {:.2f} GiB + {} GiB headroom, {:.2f} GiB "
                         "available (MemAvailable)",
                         gib(bytes), world.local_size(), world.hostname(), gib(node_need), headroom_gib, gib(available));
  }
  return does_not_fit(world, mine, what);
}

}  // namespace gpuaccept::fsdp
