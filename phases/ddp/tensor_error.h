// How far one parameter gradient is from another, tensor by tensor: the gradient check's
// measure, both against the float64 CPU reference and against a second backward that
// accumulates (gradient_check.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <utility>

#include "ddp/param_layout.h"

namespace gpuaccept::ddp {

struct TensorError {
  std::string name;
  double rel_l2 = 0;   // ||got - ref|| / ||ref|| (||got - ref|| where ref is all zero; infinity if not finite)
  double max_abs = 0;  // max |got - ref|
};

// got(j) and ref(j), j < n: element j of the two gradients, as double.
template <typename Got, typename Ref>
TensorError tensor_error(std::string name, std::size_t n, Got got, Ref ref) {
  TensorError e{std::move(name)};
  double diff2 = 0, ref2 = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const double r = ref(j), d = got(j) - r;
    diff2 += d * d;
    ref2 += r * r;
    e.max_abs = std::max(e.max_abs, std::abs(d));
  }
  e.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (!std::isfinite(e.rel_l2)) e.rel_l2 = INFINITY;
  return e;
}

// The bound on accumulation_error's rel_l2. The second backward's matmuls are other cuBLASLt
// plans (beta 1, not 0), free to sum in another order: fp32 reordering moves a gradient by
// about 1e-6 relative. A gradient overwritten instead of added, or added twice, is off by 0.5.
inline constexpr double kAccumulateTolerance = 1e-4;

// After a backward that wrote `first` and a second one of the same batch that accumulated
// into it (`after`, both in `layout`): the tensor farthest from after = 2 first.
TensorError accumulation_error(const ParamLayout& layout, std::span<const float> first, std::span<const float> after);

}  // namespace gpuaccept::ddp
