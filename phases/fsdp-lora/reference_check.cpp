#include "fsdp-lora/reference_check.h"

#include <cmath>

#include "fsdp-lora/gpu/kernels.h"

namespace gpuaccept::fsdp {

DropoutMasks replay_masks(const QwenConfig& c, const LoraConfig& lora, int B, int T, std::uint64_t seed,
                          std::uint64_t step) {
  const std::size_t N = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  const std::uint32_t threshold = gpu::dropout_threshold(lora.dropout);
  const double keep = 1.0 / (1.0 - lora.dropout);
  DropoutMasks masks;
  masks.layers.resize(static_cast<std::size_t>(c.layers));
  for (int l = 0; l < c.layers; ++l)
    for (Projection p : lora.targets) {
      const gpu::DropoutKey key{seed, step, static_cast<std::uint32_t>(l), static_cast<std::uint32_t>(p)};
      const std::uint64_t stream = gpu::dropout_stream(key);
      std::vector<double> m(N * static_cast<std::size_t>(projection_in(c, p)));
      for (std::size_t e = 0; e < m.size(); ++e) m[e] = gpu::dropout_keep(stream, e, threshold) ? keep : 0.0;
      masks.layers[static_cast<std::size_t>(l)].push_back(std::move(m));
    }
  return masks;
}

double rel_l2(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  if (!std::isfinite(num)) return INFINITY;
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace gpuaccept::fsdp
