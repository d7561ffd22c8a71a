#include "train/weights_hash.h"

#include <cstring>

namespace gpuaccept::train {

std::uint64_t weights_hash(const std::vector<float>& w) {
  std::uint64_t h = 1469598103934665603ULL;
  const auto* bytes = reinterpret_cast<const unsigned char*>(w.data());
  const std::size_t n = w.size() * sizeof(float);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    h = (h ^ word) * 1099511628211ULL;
  }
  for (; i < n; ++i) h = (h ^ bytes[i]) * 1099511628211ULL;
  return h;
}

}  // namespace gpuaccept::train
