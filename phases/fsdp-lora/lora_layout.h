// Where LoRA's trainable numbers live: one flat buffer for the fp32 master, the bf16 copy and
// the fp32 gradients (gpu/lora_linear.h computes with it; pure layout, no GPU).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "fsdp-lora/cpu_reference.h"
#include "fsdp-lora/qwen_config.h"

namespace gpuaccept::fsdp {

// Where adapter (layer, target) lives in the flat LoRA buffers: A (r, in) at a_offset, then
// B (out, r) at b_offset, adapter after adapter, layer after layer, in LoraConfig::targets'
// order. Every tensor starts at a multiple of kTensorAlignElems (64) elements, so that the
// bf16 copy (128 bytes) and the fp32 master and gradients (256 bytes) hand the matmuls aligned
// operands; the padding between tensors is zero and stays zero (its gradient is 0).
// The fp32 master, the bf16 copy and the fp32 gradients share this one layout, so the
// all-reduce of the gradients and AdamW see one contiguous buffer of total() values.
struct LoraSlot {
  int layer;
  Projection target;
  int target_index;  // j in LoraConfig::targets (LoraWeights::layers[layer][j])
  int in, out;
  std::size_t a_offset, b_offset;  // elements from the buffer's start
};

class LoraLayout {
 public:
  LoraLayout(const QwenConfig& config, const LoraConfig& lora);
  std::size_t total() const { return total_; }            // elements, padding included
  std::size_t parameters() const { return parameters_; }  // trainable numbers (lora_parameter_count)
  int rank() const { return rank_; }
  const std::vector<LoraSlot>& slots() const { return slots_; }
  // The slot of (layer, target), nullptr when target has no adapter.
  const LoraSlot* find(int layer, Projection target) const;
  // Where each layer's adapters begin: layers + 1 offsets, the last total(); layer l's
  // adapters and padding are [starts[l], starts[l + 1]) (the gradient buckets' unit).
  std::vector<std::size_t> layer_starts() const;

  // The CPU reference's adapters (or gradients) to the flat layout as fp32 (padding 0), and
  // back. Throw std::invalid_argument when the shapes do not match.
  std::vector<float> flatten(const LoraWeights& adapters) const;
  LoraWeights unflatten(std::span<const float> flat) const;

 private:
  int layers_, rank_;
  std::vector<Projection> targets_;
  std::vector<LoraSlot> slots_;  // layer-major: slots_[layer * targets + j]
  std::size_t total_ = 0, parameters_ = 0;
};

}  // namespace gpuaccept::fsdp
