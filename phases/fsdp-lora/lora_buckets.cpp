#include "fsdp-lora/lora_buckets.h"

#include <algorithm>
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

std::size_t lora_slice_stride(std::size_t n, int ranks, std::size_t align) {
  if (ranks < 1 || align == 0)
    throw std::invalid_argument(fmt::format("lora_slice_stride: {} ranks, alignment {}", ranks, align));
  const auto N = static_cast<std::size_t>(ranks);
  const std::size_t per_rank = (n + N - 1) / N;
  return (per_rank + align - 1) / align * align;
}

std::vector<OwnedPart> owned_parts(std::size_t offset, std::size_t count, std::size_t n, int ranks, std::size_t align) {
  const std::size_t stride = lora_slice_stride(n, ranks, align);
  std::vector<OwnedPart> parts;
  const std::size_t end = offset + count;
  for (int r = 0; r < ranks && stride > 0; ++r) {
    const std::size_t lo = std::max(offset, static_cast<std::size_t>(r) * stride);
    const std::size_t hi = std::min({end, static_cast<std::size_t>(r + 1) * stride, n});
    if (hi > lo) parts.push_back({r, lo, hi - lo});
  }
  return parts;
}

}  // namespace gpuaccept::fsdp
