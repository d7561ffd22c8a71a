#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ddp/param_layout.h"

using namespace gpuaccept::ddp;

TEST_CASE("the parameter layout follows llm.c's order, contiguous, summing to the count", "[ddp][layout]") {
  const ParamLayout layout(gpt2_124m);
  const std::vector<std::string> order = {"wte",  "wpe", "ln1w", "ln1b",    "qkvw",    "qkvb", "attprojw", "attprojb",
                                          "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"};
  REQUIRE(layout.tensors().size() == order.size());
  std::size_t offset = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& t = layout.tensors()[i];
    INFO(t.name);
    CHECK(t.name == order[i]);
    CHECK(t.offset == offset);
    offset += t.size;
  }
  CHECK(layout.total() == offset);
  CHECK(layout.total() == parameter_count(gpt2_124m));
}

TEST_CASE("tensor shapes are (out, in) with a leading layer dimension for block tensors", "[ddp][layout]") {
  const ParamLayout layout(gpt2_124m);
  using Shape = std::vector<std::size_t>;
  CHECK(layout[Param::wte].shape == Shape{50257, 768});
  CHECK(layout[Param::wpe].shape == Shape{1024, 768});
  CHECK(layout[Param::qkvw].shape == Shape{12, 3 * 768, 768});
  CHECK(layout[Param::fcprojw].shape == Shape{12, 768, 4 * 768});
  CHECK(layout[Param::lnfb].shape == Shape{768});
  CHECK(layout[Param::qkvw].layer_size() == 3 * 768 * 768);
  CHECK_FALSE(layout[Param::wte].per_layer);
}

TEST_CASE("layer slices of a per-layer tensor tile it in layer order", "[ddp][layout]") {
  const ParamLayout layout(gpt_tiny);
  std::vector<double> flat(layout.total());
  const auto& fcb = layout[Param::fcb];
  const auto layer1 = layout.layer_slice(std::span<double>(flat), Param::fcb, 1);
  CHECK(layer1.data() == flat.data() + fcb.offset + fcb.layer_size());
  CHECK(layer1.size() == 4u * gpt_tiny.channels);
}
