#include "ddp/tensor_error.h"

#include <stdexcept>

#include <fmt/format.h>

namespace gpuaccept::ddp {

TensorError accumulation_error(const ParamLayout& layout, std::span<const float> first, std::span<const float> after) {
  if (first.size() != layout.total() || after.size() != layout.total())
    throw std::invalid_argument(fmt::format("accumulation_error: {} and {} gradients for a layout of {}", first.size(),
                                            after.size(), layout.total()));
  TensorError worst{"none"};
  for (const ParamTensor& t : layout.tensors()) {
    TensorError e = tensor_error(
        t.name, t.size, [&](std::size_t j) { return static_cast<double>(after[t.offset + j]); },
        [&](std::size_t j) { return 2.0 * first[t.offset + j]; });
    if (e.rel_l2 >= worst.rel_l2) worst = std::move(e);
  }
  return worst;
}

}  // namespace gpuaccept::ddp
