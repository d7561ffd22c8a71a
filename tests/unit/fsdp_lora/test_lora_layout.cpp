// The flat LoRA layout: every tensor aligned, layers contiguous (the gradient buckets' unit),
// and flatten/unflatten a round trip.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "fsdp-lora/lora_buckets.h"
#include "fsdp-lora/lora_layout.h"
#include "fsdp-lora/shard_plan.h"

using namespace gpuaccept::fsdp;

TEST_CASE("lora layout: Qwen2-7B q/k/v/o at rank 64: 40.4M parameters, aligned, one range a layer") {
  LoraConfig lora;  // r 64 on q/k/v/o
  const LoraLayout layout(qwen2_7b, lora);
  REQUIRE(layout.parameters() == 40'370'176);
  REQUIRE(layout.slots().size() == 28u * 4u);
  for (const LoraSlot& s : layout.slots()) {
    REQUIRE(s.a_offset % kTensorAlignElems == 0);
    REQUIRE(s.b_offset % kTensorAlignElems == 0);
  }
  const std::vector<std::size_t> starts = layout.layer_starts();
  REQUIRE(starts.size() == 29);
  REQUIRE(starts.front() == 0);
  REQUIRE(starts.back() == layout.total());
  for (int l = 0; l < 28; ++l) {
    // Layer l's adapters lie in [starts[l], starts[l + 1]), and nothing of another layer does.
    for (const LoraSlot& s : layout.slots()) {
      const std::size_t end = s.b_offset + static_cast<std::size_t>(s.out) * 64;
      const bool inside = s.a_offset >= starts[static_cast<std::size_t>(l)] && end <= starts[static_cast<std::size_t>(l) + 1];
      REQUIRE(inside == (s.layer == l));
    }
  }
  // The buckets of the phase's default (25 MiB of fp32) cover the buffer in backward's order.
  const auto buckets = plan_lora_buckets(starts, 25u * 1024 * 1024 / 4);
  REQUIRE(buckets.front().high_layer == 27);
  REQUIRE(buckets.back().low_layer == 0);
  REQUIRE(buckets.back().offset == 0);
}

TEST_CASE("lora layout: flatten and unflatten are a round trip, padding zero; wrong shapes refused") {
  LoraConfig lora;
  lora.rank = 2;
  lora.targets = lora_targets_by_name("all");
  const LoraLayout layout(qwen_tiny, lora);
  const LoraWeights w = init_lora(qwen_tiny, lora, 7, /*b_zero=*/false);
  const std::vector<float> flat = layout.flatten(w);
  REQUIRE(flat.size() == layout.total());
  const LoraWeights back = layout.unflatten(flat);
  REQUIRE(back.layers.size() == w.layers.size());
  std::size_t nonzero = 0;
  for (std::size_t l = 0; l < w.layers.size(); ++l)
    for (std::size_t j = 0; j < w.layers[l].size(); ++j) {
      REQUIRE(back.layers[l][j].A.size() == w.layers[l][j].A.size());
      for (std::size_t i = 0; i < w.layers[l][j].A.size(); ++i)
        REQUIRE(back.layers[l][j].A[i] == static_cast<float>(w.layers[l][j].A[i]));
      for (std::size_t i = 0; i < w.layers[l][j].B.size(); ++i)
        REQUIRE(back.layers[l][j].B[i] == static_cast<float>(w.layers[l][j].B[i]));
      nonzero += w.layers[l][j].A.size() + w.layers[l][j].B.size();
    }
  REQUIRE(nonzero == layout.parameters());
  // Everything outside the tensors (alignment padding) is zero.
  std::vector<char> used(flat.size(), 0);
  for (const LoraSlot& s : layout.slots()) {
    for (std::size_t i = 0; i < 2u * static_cast<std::size_t>(s.in); ++i) used[s.a_offset + i] = 1;
    for (std::size_t i = 0; i < static_cast<std::size_t>(s.out) * 2u; ++i) used[s.b_offset + i] = 1;
  }
  for (std::size_t i = 0; i < flat.size(); ++i)
    if (!used[i]) REQUIRE(flat[i] == 0.0f);
  REQUIRE_THROWS_AS(layout.unflatten(std::vector<float>(3)), std::invalid_argument);
  LoraWeights short_w = w;
  short_w.layers.pop_back();
  REQUIRE_THROWS_WITH(layout.flatten(short_w), Catch::Contains("layers"));
}
