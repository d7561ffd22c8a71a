// A captured CUDA graph's memset nodes turned into kernel nodes that write the same bytes.
//
// Why: cuBLASLt zeroes a part of its workspace before most of its Hopper kernels, so ddp's
// GPT-2 passes hold 111 memset nodes (105 of them cuBLASLt's, a few hundred bytes each). On an
// H200 (2026-11-29):
// - launching a graph cost the host about 2 us a memset node: 127 us for the forward's graph
//   and 148 us for the backward's, against 18 and 10 us once they are kernels. The GPU waits
//   for the forward's launch at the start of each step;
// - under the profiler, the GPU sat idle 2.1-3.7 us before the kernel after a memset node
//   and 1.4-1.5 us before the memset, against 0.3-0.7 us between two kernels.
// A kernel that stores the same bytes runs as any other kernel node does.
//
// The graph stays the same work: each replacement has the memset's dependencies and
// dependents, and writes the same value over the same rows (dst, pitch, width, height,
// element size), so a replay computes the same bits.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

namespace gpuaccept::train {

struct GraphMemsets {
  int replaced = 0;          // memset nodes turned into kernel nodes
  std::size_t bytes = 0;     // what they write, in all
  std::size_t largest = 0;   // the largest one's bytes
};

// Rewrites `graph` (not yet instantiated) in place. Throws a CallError naming the failing graph
// call; the graph may then be part-rewritten and is for the caller to destroy.
GraphMemsets memsets_as_kernels(cudaGraph_t graph);

}  // namespace gpuaccept::train
