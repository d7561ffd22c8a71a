#include "fsdp-lora/lora_buckets.h"

#include <stdexcept>

#include <fmt/format.h>

namespace gpuaccept::fsdp {

std::vector<LoraBucket> plan_lora_buckets(const std::vector<std::size_t>& layer_starts, std::size_t bucket_elements) {
  if (layer_starts.size() < 2)
    throw std::invalid_argument(fmt::format("plan_lora_buckets: {} layer offsets, at least 2 needed", layer_starts.size()));
  const int L = static_cast<int>(layer_starts.size()) - 1;
  for (int l = 0; l < L; ++l)
    if (layer_starts[static_cast<std::size_t>(l) + 1] < layer_starts[static_cast<std::size_t>(l)])
      throw std::invalid_argument(fmt::format("plan_lora_buckets: layer {} starts at {}, after layer {}'s {}", l + 1,
                                              layer_starts[static_cast<std::size_t>(l) + 1], l,
                                              layer_starts[static_cast<std::size_t>(l)]));
  auto start = [&](int l) { return layer_starts[static_cast<std::size_t>(l)]; };
  // From the top down to layer 1: each bucket closes at the first layer that brings it to
  // bucket_elements; then layer 0 alone.
  std::vector<LoraBucket> buckets;
  int high = L - 1;
  for (int l = L - 1; l >= 1; --l) {
    if (start(high + 1) - start(l) >= bucket_elements || l == 1) {
      buckets.push_back({l, high, start(l), start(high + 1) - start(l)});
      high = l - 1;
    }
  }
  buckets.push_back({0, 0, start(0), start(1) - start(0)});
  return buckets;
}

}  // namespace gpuaccept::fsdp
