// Which LoRA gradients are all-reduced together, and when. The flat LoRA buffer is layer-major
// (lora_layout.h): layer l's adapters and their padding are one contiguous
// range, [layer_starts[l], layer_starts[l + 1]). Backward finishes the layers from the last to
// the first, so a bucket is a run of consecutive layers, closed once it holds bucket_elements,
// and all-reduced as soon as backward has finished its lowest layer: the reduction of layers
// l .. l+k overlaps the backward of the layers below. Only the bucket holding layer 0 waits for
// the end of backward (no base weight has gradients: nothing comes after), so layer 0 is a
// bucket of its own, and the buckets above it are cut from the top down.
#pragma once

#include <cstddef>
#include <vector>

namespace gpuaccept::fsdp {

struct LoraBucket {
  int low_layer = 0, high_layer = 0;  // the layers it holds, inclusive; reduce after low_layer's backward
  std::size_t offset = 0;             // elements into the flat buffer
  std::size_t count = 0;
};

// Buckets in the order backward completes them (highest layers first). layer_starts: L + 1
// offsets, non-decreasing, the last the buffer's total. Every element of [layer_starts[0],
// layer_starts[L]) is in exactly one bucket. bucket_elements 0: one bucket per layer. Throws
// std::invalid_argument on fewer than 2 offsets or decreasing ones.
std::vector<LoraBucket> plan_lora_buckets(const std::vector<std::size_t>& layer_starts, std::size_t bucket_elements);

// fsdp_lora.grad_reduce: reduce_scatter. Rank r of N owns [r x stride, min((r + 1) x stride, n))
// of the flat buffer of n elements, stride = ceil(n / N) rounded up to `align` elements (the
// last ranks' parts may be shorter, or empty): its gradients are reduced onto it, its AdamW
// moments are the only ones it keeps, and its updated weights go from it to the others.
// Throws std::invalid_argument when ranks < 1 or align == 0.
std::size_t lora_slice_stride(std::size_t n, int ranks, std::size_t align);
// The alignment the phase slices with: the layout's tensor alignment (256 bytes of fp32).
inline constexpr std::size_t kLoraSliceAlign = 64;

struct OwnedPart {
  int rank = 0;
  std::size_t offset = 0, count = 0;  // elements into the flat buffer
};
// The non-empty parts of [offset, offset + count) by owner, in rank order (a bucket's
// reductions, or with (0, n) every rank's slice).
std::vector<OwnedPart> owned_parts(std::size_t offset, std::size_t count, std::size_t n, int ranks, std::size_t align);

}  // namespace gpuaccept::fsdp
