// Helpers shared by the kernels of gpu/kernels/ (private to them): the training phases'
// device helpers (src/train/kernels/common.cuh: warp and block reductions, 16-byte bf16
// loads, grid sizing) under ddp's detail namespace, and the launch and argument checks,
// whose messages name ddp's kernels.
#pragma once

#include "ddp/gpu/kernels.h"
#include "train/kernels/common.cuh"

namespace gpuaccept::ddp::gpu::detail {

using train::detail::aligned16;
using train::detail::block_max;
using train::detail::block_reduce;
using train::detail::block_sum;
using train::detail::ceil_div;
using train::detail::copy_bf16;
using train::detail::global_thread;
using train::detail::global_threads;
using train::detail::grid_for;
using train::detail::kFullMask;
using train::detail::kWarp;
using train::detail::load_bf16;
using train::detail::load_f32;
using train::detail::store_bf16;
using train::detail::store_f32;
using train::detail::warp_max;
using train::detail::warp_sum;

inline void check_launch(const char* kernel, const std::source_location& loc = std::source_location::current()) {
  train::detail::check_launch_of("ddp", kernel, loc);
}
inline void require(bool ok, const char* what) { train::detail::require_of("ddp", ok, what); }

// Device scratch for the deterministic reductions of the backward pass (bias, LayerNorm and
// embedding gradients): each block writes its partial sums there and a second kernel adds
// them up in a fixed order, where atomicAdd's order, different on every run, would make two
// runs of the same step differ in the last bits (and a checkpoint's resume unverifiable bit
// for bit). One buffer per process, grown on demand (cudaFree and cudaMalloc synchronize the
// device, so a kernel still reading the old one is done) and never shrunk: only the first
// calls at a size pay. Its users run on one stream at a time, the model's. A CUDA graph
// that captured kernels writing there holds the address: `generation` counts the
// reallocations, so the graph's owner knows when to capture again (gpu/model_graphs.h).
struct ReductionScratch {
  void* buffer = nullptr;
  std::size_t capacity = 0;
  std::uint64_t generation = 0;
};
inline ReductionScratch& reduction_scratch_state() {
  static ReductionScratch s;
  return s;
}
inline void* reduction_scratch(std::size_t bytes) {
  ReductionScratch& s = reduction_scratch_state();
  if (bytes > s.capacity) {
    if (s.buffer) (void)cudaFree(s.buffer);
    s.buffer = nullptr;
    s.capacity = 0;
    ++s.generation;
    if (cudaMalloc(&s.buffer, bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      require(false, "reduction_scratch: cudaMalloc failed (out of device memory)");
    }
    s.capacity = bytes;
  }
  return s.buffer;
}

// Where add_column_sums adds: the partials' columns [p * width, (p + 1) * width) into out[p].
inline constexpr int kMaxColumnSumParts = 3;
struct ColumnSumParts {
  float* out[kMaxColumnSumParts] = {};
  int count = 0;  // parts in use
  int width = 0;  // columns of each
};
// out[c / width][c % width] += sum over r of partials[r, c], partials (rows, count * width)
// fp32, rows summed in a fixed order (column_sums.cu). What the reductions above end with.
void add_column_sums(const ColumnSumParts& parts, const float* partials, int rows, cudaStream_t stream);

}  // namespace gpuaccept::ddp::gpu::detail
