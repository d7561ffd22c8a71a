#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "ddp/gpt_config.h"
#include "ddp/tensor_error.h"

using namespace gpuaccept::ddp;

namespace {

// A gradient over a layout with every value nonzero and a different size
// each tensor (element j of the whole buffer: 1 + j mod 7, signs alternating).
std::vector<float> some_gradient(const ParamLayout& layout) {
  std::vector<float> g(layout.total());
  for (std::size_t j = 0; j < g.size(); ++j) g[j] = static_cast<float>((j % 2 ? -1.0 : 1.0) * (1 + j % 7));
  return g;
}

}  // namespace

TEST_CASE("tensor_error: relative L2 and max abs, zero and non-finite references", "[ddp][gradient-check]") {
  const std::vector<double> ref = {3, 4}, got = {3, 4.5};
  const TensorError e = tensor_error("t", 2, [&](std::size_t j) { return got[j]; }, [&](std::size_t j) { return ref[j]; });
  CHECK(e.name == "t");
  CHECK(e.rel_l2 == Approx(0.5 / 5.0));
  CHECK(e.max_abs == Approx(0.5));
  // A reference of zeros: the absolute L2 norm of the difference.
  const TensorError z = tensor_error("z", 2, [&](std::size_t j) { return got[j]; }, [](std::size_t) { return 0.0; });
  CHECK(z.rel_l2 == Approx(std::sqrt(9 + 4.5 * 4.5)));
  const TensorError n = tensor_error("n", 2, [](std::size_t) { return NAN; }, [&](std::size_t j) { return ref[j]; });
  CHECK(std::isinf(n.rel_l2));
}

// Each side of kAccumulateTolerance: twice the gradient with a reordered sum's rounding
// passes; a backward that overwrote instead of adding, or added twice, or left one tensor
// alone, fails and is named.
TEST_CASE("accumulation_error: a second backward that adds passes; one that overwrites or adds twice fails",
          "[ddp][gradient-check]") {
  const ParamLayout layout(GptConfig{100, 64, 2, 2, 128});  // the gradient check's model
  const std::vector<float> first = some_gradient(layout);
  std::vector<float> after(first.size());

  for (std::size_t j = 0; j < first.size(); ++j) after[j] = 2 * first[j] * (1 + (j % 3 ? 1e-6f : -1e-6f));
  const TensorError added = accumulation_error(layout, first, after);
  CHECK(added.rel_l2 < 2e-6);
  CHECK(added.rel_l2 <= kAccumulateTolerance);

  const TensorError overwritten = accumulation_error(layout, first, first);
  CHECK(overwritten.rel_l2 == Approx(0.5));
  CHECK(overwritten.rel_l2 > kAccumulateTolerance);

  for (std::size_t j = 0; j < first.size(); ++j) after[j] = 3 * first[j];
  CHECK(accumulation_error(layout, first, after).rel_l2 == Approx(0.5));

  // Only fcb left as the first backward wrote it: named as the worst.
  for (std::size_t j = 0; j < first.size(); ++j) after[j] = 2 * first[j];
  const ParamTensor& fcb = layout[Param::fcb];
  for (std::size_t j = fcb.offset; j < fcb.offset + fcb.size; ++j) after[j] = first[j];
  const TensorError one = accumulation_error(layout, first, after);
  CHECK(one.name == "fcb");
  CHECK(one.rel_l2 == Approx(0.5));

  CHECK_THROWS_WITH(accumulation_error(layout, first, std::vector<float>(3)), Catch::Contains("for a layout of"));
}
