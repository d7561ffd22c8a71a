// Where each parameter tensor lives in the one flat parameter buffer, in llm.c's order,
// so a buffer written here reads the same in a GPU implementation modelled on llm.c and
// gradient buckets can be cut from contiguous ranges. Per-layer tensors are stacked: the
// first dimension is the layer, and layer l's slice starts at offset + l * layer_size.
// Weights of linear layers are (out, in), PyTorch's convention: y = x W^T + b.
// Embeddings are tied: wte (V, C) is also the output projection, logits = x wte^T.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "ddp/gpt_config.h"

namespace gpuaccept::ddp {

enum class Param {
  wte, wpe,                        // token (V, C) and position (maxT, C) embeddings
  ln1w, ln1b,                      // (L, C)
  qkvw, qkvb,                      // (L, 3C, C), (L, 3C): query, key, value stacked along the output
  attprojw, attprojb,              // (L, C, C), (L, C)
  ln2w, ln2b,                      // (L, C)
  fcw, fcb,                        // (L, 4C, C), (L, 4C)
  fcprojw, fcprojb,                // (L, C, 4C), (L, C)
  lnfw, lnfb,                      // (C)
};

struct ParamTensor {
  std::string name;
  std::vector<std::size_t> shape;
  std::size_t offset = 0;  // in elements from the start of the flat buffer
  std::size_t size = 0;    // elements, all layers together
  bool per_layer = false;  // shape[0] is the layer
  std::size_t layer_size() const { return per_layer ? size / shape[0] : size; }
};

class ParamLayout {
 public:
  explicit ParamLayout(const GptConfig& config);  // validates config

  const std::vector<ParamTensor>& tensors() const { return tensors_; }  // in buffer order
  const ParamTensor& operator[](Param p) const { return tensors_[static_cast<std::size_t>(p)]; }
  std::size_t total() const { return total_; }

  // The whole tensor, or one layer's slice of a per-layer tensor.
  template <typename T>
  std::span<T> slice(std::span<T> flat, Param p) const {
    const auto& t = (*this)[p];
    return flat.subspan(t.offset, t.size);
  }
  template <typename T>
  std::span<T> layer_slice(std::span<T> flat, Param p, int layer) const {
    const auto& t = (*this)[p];
    return flat.subspan(t.offset + static_cast<std::size_t>(layer) * t.layer_size(), t.layer_size());
  }

 private:
  std::vector<ParamTensor> tensors_;
  std::size_t total_ = 0;
};

}  // namespace gpuaccept::ddp
