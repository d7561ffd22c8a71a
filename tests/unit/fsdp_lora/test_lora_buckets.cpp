// The LoRA gradient buckets: every element reduced exactly once, in backward's order, layer 0
// alone at the end, each bucket closed at bucket_elements.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "fsdp-lora/lora_buckets.h"

using namespace gpuaccept::fsdp;

namespace {

// Offsets of L layers of `per_layer` elements each, starting at 0.
std::vector<std::size_t> even_layers(int L, std::size_t per_layer) {
  std::vector<std::size_t> starts;
  for (int l = 0; l <= L; ++l) starts.push_back(static_cast<std::size_t>(l) * per_layer);
  return starts;
}

// Every element of [starts.front(), starts.back()) in exactly one bucket; buckets in backward
// order (descending layers, adjacent), each bucket's range its layers' ranges.
void require_cover(const std::vector<LoraBucket>& buckets, const std::vector<std::size_t>& starts) {
  const int L = static_cast<int>(starts.size()) - 1;
  REQUIRE_FALSE(buckets.empty());
  int next_high = L - 1;
  std::size_t end = starts.back();
  for (const LoraBucket& b : buckets) {
    REQUIRE(b.high_layer == next_high);
    REQUIRE(b.low_layer <= b.high_layer);
    REQUIRE(b.offset == starts[static_cast<std::size_t>(b.low_layer)]);
    REQUIRE(b.offset + b.count == end);
    end = b.offset;
    next_high = b.low_layer - 1;
  }
  REQUIRE(next_high == -1);
  REQUIRE(end == starts.front());
}

}  // namespace

TEST_CASE("lora buckets: 28 layers of 5.8 MB in 25 MiB buckets: 5 layers a bucket, layer 0 alone last") {
  const std::size_t per_layer = 1'441'792;  // Qwen2-7B's q/k/v/o adapters at rank 64, fp32 elements
  const auto starts = even_layers(28, per_layer);
  const auto buckets = plan_lora_buckets(starts, 25u * 1024 * 1024 / 4);
  require_cover(buckets, starts);
  // 6,553,600 elements: the fifth layer brings a bucket over it.
  REQUIRE(buckets.front().high_layer == 27);
  REQUIRE(buckets.front().low_layer == 23);
  REQUIRE(buckets.back().low_layer == 0);
  REQUIRE(buckets.back().high_layer == 0);
  REQUIRE(buckets.back().count == per_layer);
  // Layers 27..1 in fives from the top: 27-23, 22-18, 17-13, 12-8, 7-3, then 2-1 (cut at layer 1).
  REQUIRE(buckets.size() == 7);
  REQUIRE(buckets[5].low_layer == 1);
  REQUIRE(buckets[5].high_layer == 2);
}

TEST_CASE("lora buckets: bucket_elements 0 gives one bucket per layer, top first") {
  const auto starts = even_layers(4, 100);
  const auto buckets = plan_lora_buckets(starts, 0);
  require_cover(buckets, starts);
  REQUIRE(buckets.size() == 4);
  for (int i = 0; i < 4; ++i) {
    REQUIRE(buckets[static_cast<std::size_t>(i)].low_layer == 3 - i);
    REQUIRE(buckets[static_cast<std::size_t>(i)].high_layer == 3 - i);
  }
}

TEST_CASE("lora buckets: one layer, or buckets larger than the buffer") {
  const auto one = plan_lora_buckets({16, 80}, 1000);
  REQUIRE(one.size() == 1);
  REQUIRE(one[0].offset == 16);
  REQUIRE(one[0].count == 64);
  const auto starts = even_layers(5, 10);
  const auto two = plan_lora_buckets(starts, 1'000'000);
  require_cover(two, starts);
  REQUIRE(two.size() == 2);  // layers 4..1, then 0
}

TEST_CASE("lora buckets: uneven layers (padding) and bad offsets") {
  const std::vector<std::size_t> starts{0, 7, 7, 30, 31, 64};
  require_cover(plan_lora_buckets(starts, 20), starts);
  REQUIRE_THROWS_AS(plan_lora_buckets({5}, 10), std::invalid_argument);
  REQUIRE_THROWS_WITH(plan_lora_buckets({0, 10, 5}, 10), Catch::Contains("layer 2 starts at 5"));
}

TEST_CASE("lora slices: every element owned by one rank, aligned strides, short or empty last parts") {
  REQUIRE(lora_slice_stride(1000, 4, 64) == 256);
  REQUIRE(lora_slice_stride(1024, 4, 64) == 256);
  REQUIRE(lora_slice_stride(0, 4, 64) == 0);
  REQUIRE_THROWS_AS(lora_slice_stride(10, 0, 64), std::invalid_argument);
  for (const std::size_t n : {1u, 63u, 64u, 1000u, 40'370'176u})
    for (const int N : {1, 2, 3, 4, 8}) {
      const auto all = owned_parts(0, n, n, N, 64);
      std::size_t next = 0;
      for (const OwnedPart& p : all) {
        REQUIRE(p.offset == next);  // in rank order, adjacent, covering [0, n)
        REQUIRE(p.offset == static_cast<std::size_t>(p.rank) * lora_slice_stride(n, N, 64));
        next = p.offset + p.count;
      }
      REQUIRE(next == n);
    }
  // 100 elements over 8 ranks in strides of 64: ranks 0 and 1 own them, the others nothing.
  const auto few = owned_parts(0, 100, 100, 8, 64);
  REQUIRE(few.size() == 2);
  REQUIRE(few[1].rank == 1);
  REQUIRE(few[1].count == 36);
}

TEST_CASE("lora slices: a bucket's parts are its intersections with the owners' slices") {
  // n 1000, 4 ranks, stride 256: a bucket [200, 600) lies on ranks 0, 1, 2.
  const auto parts = owned_parts(200, 400, 1000, 4, 64);
  REQUIRE(parts.size() == 3);
  REQUIRE(parts[0].rank == 0);
  REQUIRE(parts[0].offset == 200);
  REQUIRE(parts[0].count == 56);
  REQUIRE(parts[1].rank == 1);
  REQUIRE(parts[1].count == 256);
  REQUIRE(parts[2].rank == 2);
  REQUIRE(parts[2].offset == 512);
  REQUIRE(parts[2].count == 88);
}
