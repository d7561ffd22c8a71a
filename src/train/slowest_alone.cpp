#include "train/slowest_alone.h"

#include <cmath>

#include <fmt/format.h>

namespace gpuaccept::train {

SlowestAlone slowest_alone(const std::vector<std::vector<double>>& rates) {
  SlowestAlone s;
  for (std::size_t r = 0; r < rates.size(); ++r) {
    if (rates[r].empty() || !std::isfinite(rates[r][0])) continue;
    if (s.rank < 0 || rates[r][0] < s.rate) s = {rates[r][0], static_cast<int>(r)};
  }
  return s;
}

std::string slowest_alone_note(const SlowestAlone& slowest, std::size_t ranks, double per_gpu_at_scale,
                               const std::string& host) {
  if (ranks < 2 || slowest.rank < 0 || !(slowest.rate > 0)) return "";
  return fmt::format(", the slowest GPU alone: rank {} on {} at {:.0f}, of which this is {:.1f}%", slowest.rank, host,
                     slowest.rate, 100.0 * per_gpu_at_scale / slowest.rate);
}

std::string slowest_alone_note(const SlowestAlone& slowest, const World& world, double per_gpu_at_scale) {
  const auto& nodes = world.rank_nodes();
  const bool placed = slowest.rank >= 0 && static_cast<std::size_t>(slowest.rank) < nodes.size();
  const std::string host = placed ? world.node_names()[static_cast<std::size_t>(nodes[slowest.rank])] : "?";
  return slowest_alone_note(slowest, static_cast<std::size_t>(world.size()), per_gpu_at_scale, host);
}

void record_vs_slowest(ResultWriter& out, const SlowestAlone& slowest, const World& world, double per_gpu_at_scale,
                       const Params& params) {
  if (world.size() < 2 || slowest.rank < 0 || !(slowest.rate > 0) || !std::isfinite(per_gpu_at_scale)) return;
  out.job_measure("scaling", "efficiency_vs_slowest", 100.0 * per_gpu_at_scale / slowest.rate, "%", params).message =
      fmt::format("{:.0f} tokens/s per GPU against {:.0f} of rank {} alone, the slowest GPU alone: GPUs in lockstep "
                  "step at its pace, so what this loses is communication and what comes with it (kernels slowed "
                  "beside it, ranks arriving at each step apart)",
                  per_gpu_at_scale, slowest.rate, slowest.rank);
}

}  // namespace gpuaccept::train
