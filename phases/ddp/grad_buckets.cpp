#include "ddp/grad_buckets.h"

#include <algorithm>

namespace gpuaccept::ddp {

namespace {

void add_range(GradBucket& b, std::size_t offset, std::size_t count) {
  if (count == 0) return;
  b.elements += count;
  if (!b.ranges.empty() && b.ranges.back().offset + b.ranges.back().count == offset) {
    b.ranges.back().count += count;  // the same tensor's slices of consecutive layers
    return;
  }
  b.ranges.push_back({offset, count});
}

void sort_and_merge(GradBucket& b) {
  std::sort(b.ranges.begin(), b.ranges.end(), [](const GradRange& x, const GradRange& y) { return x.offset < y.offset; });
  std::vector<GradRange> merged;
  for (const auto& r : b.ranges) {
    if (!merged.empty() && merged.back().offset + merged.back().count == r.offset) merged.back().count += r.count;
    else merged.push_back(r);
  }
  b.ranges = std::move(merged);
}

}  // namespace

std::vector<GradBucket> plan_grad_buckets(const ParamLayout& layout, int layers, std::size_t bucket_elements) {
  std::vector<GradBucket> buckets;
  GradBucket head;
  head.ready_after_layer = head_stage(layers);
  for (Param p : {Param::wte, Param::lnfw, Param::lnfb}) add_range(head, layout[p].offset, layout[p].size);
  sort_and_merge(head);
  buckets.push_back(std::move(head));

  GradBucket open;
  for (int l = layers - 1; l >= 0; --l) {
    if (open.layers_to < 0) open.layers_to = l;
    for (const auto& t : layout.tensors()) {
      if (!t.per_layer) continue;
      add_range(open, t.offset + static_cast<std::size_t>(l) * t.layer_size(), t.layer_size());
    }
    open.layers_from = l;
    open.ready_after_layer = l;
    if (open.elements >= bucket_elements || l == 0) {
      sort_and_merge(open);
      buckets.push_back(std::move(open));
      open = GradBucket{};
    }
  }
  GradBucket last;
  last.ready_after_layer = kEmbeddingsStage;
  add_range(last, layout[Param::wpe].offset, layout[Param::wpe].size);
  buckets.push_back(std::move(last));
  return buckets;
}

GradRange reduce_share(std::size_t elements, int world, int rank) {
  const std::size_t w = static_cast<std::size_t>(world), r = static_cast<std::size_t>(rank);
  const std::size_t share = (elements + w * kSliceAlign - 1) / (w * kSliceAlign) * kSliceAlign;
  const std::size_t first = std::min(elements, r * share);
  return {first, std::min(elements, first + share) - first};
}

}  // namespace gpuaccept::ddp
