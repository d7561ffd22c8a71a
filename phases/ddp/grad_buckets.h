// Which gradients are all-reduced together, and when. Backward finishes the output head
// first (wte as the output projection, the final LayerNorm), then the layers from the last
// to the first, then the embeddings; a layer's gradients are spread over the flat buffer
// (one slice in each per-layer tensor, param_layout.h). The first bucket is the head's. A
// layer bucket gathers the slices of one or more consecutive layers, closing once it holds
// `bucket_elements` (so small models do not pay one NCCL launch per layer), and is
// all-reduced as soon as its lowest layer is done. The last bucket holds wpe. wte's other
// part, from the token embedding, is not in the flat buffer when it is reduced: it is
// gathered by token (gpu/embedding_rows.h) and reduced beside the last bucket.
#pragma once

#include <cstddef>
#include <vector>

#include "ddp/param_layout.h"

namespace gpuaccept::ddp {

// Backward's stages past the layers 0 .. L-1, as GptModel::backward reports them to its
// layer_done hook: the output head first (wte as the output projection, the final LayerNorm)
// as stage L, and the embeddings last (wpe, and the token embedding's rows) as this one.
inline constexpr int kEmbeddingsStage = -1;
inline constexpr int head_stage(int layers) { return layers; }

struct GradRange {
  std::size_t offset = 0;  // elements into the flat gradient buffer
  std::size_t count = 0;
};

struct GradBucket {
  int ready_after_layer = kEmbeddingsStage;  // all-reduce once backward finished this stage: a
                                            // layer, head_stage(L) or kEmbeddingsStage
  int layers_from = -1, layers_to = -1;  // the layers it holds, inclusive (-1: none)
  std::vector<GradRange> ranges;  // in buffer order, adjacent slices merged
  std::size_t elements = 0;
};

// One rank's share of a packed bucket of `elements` in the copy-engine all-reduce
// (gpu/gradient_sync.h): the rank that averages it for all. Shares are equal multiples of
// kSliceAlign elements (16 bytes of bf16, for the kernels' vector loads) but the last ranks',
// which may be shorter or empty; together they cover the bucket once, in rank order.
inline constexpr std::size_t kSliceAlign = 8;
GradRange reduce_share(std::size_t elements, int world, int rank);

// Buckets in the order backward completes them. Every gradient element is in exactly one
// range of one bucket. bucket_elements 0 means one bucket per layer.
std::vector<GradBucket> plan_grad_buckets(const ParamLayout& layout, int layers, std::size_t bucket_elements);

}  // namespace gpuaccept::ddp
