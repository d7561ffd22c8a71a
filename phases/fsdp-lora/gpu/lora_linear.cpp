#include "fsdp-lora/gpu/lora_linear.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "fsdp-lora/shard_plan.h"

namespace gpuaccept::fsdp::gpu {

namespace {

std::size_t round_up(std::size_t n, std::size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

}  // namespace

// ---------------------------------------------------------------- the flat layout

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

// ---------------------------------------------------------------- a projection with its adapter

LoraLinear::LoraLinear(Gemm& gemm, int N, int rank, double scale, int max_in)
    : gemm_(gemm),
      N_(N),
      rank_(rank),
      scale_(static_cast<float>(scale)),
      dropped_(static_cast<std::size_t>(N) * static_cast<std::size_t>(max_in)),
      dz_(static_cast<std::size_t>(N) * static_cast<std::size_t>(rank)) {}

const bf16* LoraLinear::dropped_input(const bf16* x, int in, const Adapter& ad, cudaStream_t stream) {
  if (ad.dropout == 0) return x;
  lora_dropout_forward(dropped_.get(), in, x, in, N_, in, ad.dropout, ad.key, nullptr, stream);
  return dropped_.get();
}

void LoraLinear::forward(bf16* y, const bf16* x, const FrozenLinear& p, const Adapter* ad, cudaStream_t stream,
                         const bf16* residual, bool adapter_only) {
  const int N = N_, r = rank_;
  if (!adapter_only) gemm_.linear(y, x, p.w, p.bias, N, p.in, p.out, stream, residual);  // y (N, out) = x W^T + b (+ res)
  if (!ad) return;
  const bf16* xd = dropped_input(x, p.in, *ad, stream);
  gemm_.linear(ad->z, xd, ad->A, nullptr, N, p.in, r, stream);                      // z (N, r) = xd A^T
  scale_bf16(ad->z, static_cast<std::size_t>(N) * r, scale_, stream);               // z = s * xd A^T
  if (!adapter_only) gemm_.linear(y, ad->z, ad->B, nullptr, N, r, p.out, stream, y);  // y (N, out) += z B^T
}

void LoraLinear::backward(const InputGrad& dx, const bf16* dy, const bf16* x, const FrozenLinear& p, const Adapter* ad,
                          cudaStream_t stream) {
  const int N = N_, r = rank_;
  if (ad) {
    gemm_.linear_dweight(ad->dB, dy, ad->z, N, r, p.out, stream);                  // dB (out, r) += dy^T z
    gemm_.linear_dinput(dz_.get(), false, false, dy, ad->B, N, r, p.out, stream);  // dz (N, r) = dy B
    scale_bf16(dz_.get(), static_cast<std::size_t>(N) * r, scale_, stream);        // dz = s * dy B
    const bf16* xd = dropped_input(x, p.in, *ad, stream);
    gemm_.linear_dweight(ad->dA, dz_.get(), xd, N, p.in, r, stream);               // dA (r, in) += dz^T xd
  }
  gemm_.linear_dinput(dx.data, dx.fp32, dx.accumulate, dy, p.w, N, p.in, p.out, stream);  // dx (N, in) (+)= dy W
  if (!ad) return;
  if (ad->dropout == 0) {
    gemm_.linear_dinput(dx.data, dx.fp32, true, dz_.get(), ad->A, N, p.in, r, stream);  // dx += dz A
    return;
  }
  // dx += mask * (dz A): the product into the scratch (dropout(x) is no longer needed), then
  // the mask of the same key, added into dx.
  gemm_.linear_dinput(dropped_.get(), false, false, dz_.get(), ad->A, N, p.in, r, stream);  // (N, in) = dz A
  if (dx.fp32)
    lora_dropout_backward_fp32(static_cast<float*>(dx.data), p.in, dropped_.get(), p.in, N, p.in, ad->dropout, ad->key,
                               stream);
  else
    lora_dropout_backward(static_cast<bf16*>(dx.data), p.in, dropped_.get(), p.in, N, p.in, ad->dropout, ad->key, true,
                          stream);
}

}  // namespace gpuaccept::fsdp::gpu
