// Gradient buckets: every gradient element reduced exactly once, in the order backward
// completes them: the output head (wte, the final LayerNorm), the layers, then wpe.
#include <catch2/catch.hpp>

#include <vector>

#include "ddp/grad_buckets.h"

using namespace gpuaccept::ddp;

namespace {

// How many buckets hold each element of the flat buffer.
std::vector<int> coverage(const ParamLayout& layout, const std::vector<GradBucket>& buckets) {
  std::vector<int> seen(layout.total(), 0);
  for (const auto& b : buckets) {
    std::size_t elements = 0;
    for (const auto& r : b.ranges) {
      for (std::size_t i = r.offset; i < r.offset + r.count; ++i) ++seen.at(i);
      elements += r.count;
    }
    CHECK(elements == b.elements);
  }
  return seen;
}

}  // namespace

TEST_CASE("one bucket per layer covers every gradient once, head first, last layer next") {
  const GptConfig cfg{64, 16, 3, 2, 16};
  const ParamLayout layout(cfg);
  const auto buckets = plan_grad_buckets(layout, cfg.layers, 0);
  REQUIRE(buckets.size() == 5);
  CHECK(buckets[0].ready_after_layer == head_stage(3));  // the output head: stage 3 of 3 layers
  CHECK(head_stage(3) == 3);
  CHECK(buckets[1].ready_after_layer == 2);
  CHECK(buckets[2].ready_after_layer == 1);
  CHECK(buckets[3].ready_after_layer == 0);
  CHECK(buckets[4].ready_after_layer == kEmbeddingsStage);
  CHECK(kEmbeddingsStage == -1);
  // A layer's slices: one per per-layer tensor (12), none adjacent in the flat buffer.
  CHECK(buckets[1].ranges.size() == 12);
  for (int n : coverage(layout, buckets)) REQUIRE(n == 1);
}

TEST_CASE("the head bucket holds wte and the final LayerNorm, the last bucket wpe") {
  const GptConfig cfg{64, 16, 2, 2, 16};
  const ParamLayout layout(cfg);
  const auto buckets = plan_grad_buckets(layout, cfg.layers, 0);
  const GradBucket& head = buckets.front();
  CHECK(head.elements == layout[Param::wte].size + layout[Param::lnfw].size + layout[Param::lnfb].size);
  CHECK(head.layers_from == -1);
  // wte first in the buffer, lnfw and lnfb adjacent at its end: two ranges.
  REQUIRE(head.ranges.size() == 2);
  CHECK(head.ranges[0].offset == layout[Param::wte].offset);
  CHECK(head.ranges[0].count == layout[Param::wte].size);
  CHECK(head.ranges[1].offset == layout[Param::lnfw].offset);
  CHECK(head.ranges[1].count == layout[Param::lnfw].size + layout[Param::lnfb].size);
  const GradBucket& last = buckets.back();
  CHECK(last.ready_after_layer == kEmbeddingsStage);
  REQUIRE(last.ranges.size() == 1);
  CHECK(last.ranges[0].offset == layout[Param::wpe].offset);
  CHECK(last.elements == layout[Param::wpe].size);
}

TEST_CASE("large buckets merge consecutive layers and adjacent slices") {
  const GptConfig cfg{64, 16, 4, 2, 16};
  const ParamLayout layout(cfg);
  const std::size_t per_layer = (layout.total() - layout[Param::wte].size - layout[Param::wpe].size -
                                 layout[Param::lnfw].size - layout[Param::lnfb].size) / cfg.layers;
  const auto buckets = plan_grad_buckets(layout, cfg.layers, 2 * per_layer);
  REQUIRE(buckets.size() == 4);  // head, layers 3-2, layers 1-0, wpe
  CHECK(buckets[1].layers_to == 3);
  CHECK(buckets[1].layers_from == 2);
  CHECK(buckets[1].ready_after_layer == 2);
  CHECK(buckets[2].ready_after_layer == 0);
  CHECK(buckets[1].elements == 2 * per_layer);
  // Layers 3 and 2 of one tensor are adjacent: 12 ranges, not 24.
  CHECK(buckets[1].ranges.size() == 12);
  for (int n : coverage(layout, buckets)) REQUIRE(n == 1);
}

TEST_CASE("a bucket larger than the model holds all layers in one") {
  const GptConfig cfg{64, 16, 3, 2, 16};
  const ParamLayout layout(cfg);
  const auto buckets = plan_grad_buckets(layout, cfg.layers, layout.total() * 2);
  REQUIRE(buckets.size() == 3);
  CHECK(buckets[1].ready_after_layer == 0);
  for (int n : coverage(layout, buckets)) REQUIRE(n == 1);
}

TEST_CASE("the copy-engine all-reduce's shares cover a bucket once, in rank order, aligned") {
  for (std::size_t elements : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{63},
                               std::size_t{6553600}, std::size_t{6553601}}) {
    for (int world : {1, 2, 3, 8, 16}) {
      std::size_t next = 0;
      for (int r = 0; r < world; ++r) {
        const GradRange s = reduce_share(elements, world, r);
        INFO("elements " << elements << ", world " << world << ", rank " << r);
        CHECK(s.offset == next);  // adjacent, in rank order
        if (s.count > 0) CHECK(s.offset % kSliceAlign == 0);
        // Equal shares but the last ranks': never more than the first rank's, and equal to it
        // wherever another share follows.
        CHECK(s.count <= reduce_share(elements, world, 0).count);
        if (s.offset + s.count < elements) CHECK(s.count == reduce_share(elements, world, 0).count);
        if (s.offset + s.count < elements) CHECK(s.count % kSliceAlign == 0);
        next = s.offset + s.count;
      }
      CHECK(next == elements);
    }
  }
  // Two ranks of an odd bucket: the first takes the aligned larger half.
  CHECK(reduce_share(21, 2, 0).count == 16);
  CHECK(reduce_share(21, 2, 1).offset == 16);
  CHECK(reduce_share(21, 2, 1).count == 5);
}
