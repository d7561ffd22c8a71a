#include "fsdp-lora/lora_layout.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "fsdp-lora/shard_plan.h"

namespace gpuaccept::fsdp {

namespace {

std::size_t round_up(std::size_t n, std::size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

}  // namespace

LoraLayout::LoraLayout(const QwenConfig& config, const LoraConfig& lora)
    : layers_(config.layers), rank_(lora.rank), targets_(lora.targets) {
  validate(config);
  if (lora.rank <= 0) throw std::invalid_argument(fmt::format("LoRA rank {} must be positive", lora.rank));
  const std::size_t r = static_cast<std::size_t>(lora.rank);
  for (int l = 0; l < config.layers; ++l)
    for (std::size_t j = 0; j < lora.targets.size(); ++j) {
      const Projection p = lora.targets[j];
      const int in = projection_in(config, p), out = projection_out(config, p);
      LoraSlot s{l, p, static_cast<int>(j), in, out, 0, 0};
      s.a_offset = round_up(total_, kTensorAlignElems);
      s.b_offset = round_up(s.a_offset + r * static_cast<std::size_t>(in), kTensorAlignElems);
      total_ = s.b_offset + static_cast<std::size_t>(out) * r;
      parameters_ += r * static_cast<std::size_t>(in + out);
      slots_.push_back(s);
    }
  total_ = round_up(total_, kTensorAlignElems);
}

const LoraSlot* LoraLayout::find(int layer, Projection target) const {
  if (layer < 0 || layer >= layers_) return nullptr;
  for (std::size_t j = 0; j < targets_.size(); ++j)
    if (targets_[j] == target) return &slots_[static_cast<std::size_t>(layer) * targets_.size() + j];
  return nullptr;
}

std::vector<std::size_t> LoraLayout::layer_starts() const {
  std::vector<std::size_t> starts;
  const std::size_t per_layer = targets_.size();
  for (int l = 0; l < layers_; ++l) starts.push_back(l == 0 ? 0 : slots_[static_cast<std::size_t>(l) * per_layer].a_offset);
  starts.push_back(total_);
  return starts;
}

std::vector<float> LoraLayout::flatten(const LoraWeights& adapters) const {
  if (adapters.layers.size() != static_cast<std::size_t>(layers_))
    throw std::invalid_argument(fmt::format("LoraLayout::flatten: {} layers, the layout has {}", adapters.layers.size(), layers_));
  std::vector<float> flat(total_, 0.0f);
  const std::size_t r = static_cast<std::size_t>(rank_);
  for (const LoraSlot& s : slots_) {
    const auto& layer = adapters.layers[static_cast<std::size_t>(s.layer)];
    if (layer.size() != targets_.size())
      throw std::invalid_argument(fmt::format("LoraLayout::flatten: layer {} has {} adapters, the layout {}", s.layer,
                                              layer.size(), targets_.size()));
    const LoraAdapter& ad = layer[static_cast<std::size_t>(s.target_index)];
    if (ad.A.size() != r * static_cast<std::size_t>(s.in) || ad.B.size() != static_cast<std::size_t>(s.out) * r)
      throw std::invalid_argument(fmt::format("LoraLayout::flatten: adapter {}.{} has A {} and B {} values, the layout "
                                              "{} and {}", s.layer, projection_name(s.target), ad.A.size(), ad.B.size(),
                                              r * static_cast<std::size_t>(s.in), static_cast<std::size_t>(s.out) * r));
    std::transform(ad.A.begin(), ad.A.end(), flat.begin() + static_cast<std::ptrdiff_t>(s.a_offset),
                   [](double v) { return static_cast<float>(v); });
    std::transform(ad.B.begin(), ad.B.end(), flat.begin() + static_cast<std::ptrdiff_t>(s.b_offset),
                   [](double v) { return static_cast<float>(v); });
  }
  return flat;
}

LoraWeights LoraLayout::unflatten(std::span<const float> flat) const {
  if (flat.size() != total_)
    throw std::invalid_argument(fmt::format("LoraLayout::unflatten: {} values, the layout has {}", flat.size(), total_));
  const std::size_t r = static_cast<std::size_t>(rank_);
  LoraWeights out;
  out.layers.assign(static_cast<std::size_t>(layers_), std::vector<LoraAdapter>(targets_.size()));
  for (const LoraSlot& s : slots_) {
    LoraAdapter& ad = out.layers[static_cast<std::size_t>(s.layer)][static_cast<std::size_t>(s.target_index)];
    const auto a = flat.subspan(s.a_offset, r * static_cast<std::size_t>(s.in));
    const auto b = flat.subspan(s.b_offset, static_cast<std::size_t>(s.out) * r);
    ad.A.assign(a.begin(), a.end());
    ad.B.assign(b.begin(), b.end());
  }
  return out;
}

}  // namespace gpuaccept::fsdp
