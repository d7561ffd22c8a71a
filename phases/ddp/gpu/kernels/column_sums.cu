// The second half of the backward pass's deterministic reductions (common.cuh,
// reduction_scratch): per-block partial sums, (rows, cols) fp32, added up column by column in
// a fixed order. Block (32, kSlices): 32 consecutive columns (coalesced loads), the kSlices
// thread rows each summing every kSlices-th partial row in order, then the slices in order:
// the same bits on every run, with enough threads in flight that 528 rows of partials take a
// few microseconds (one thread per column, walking them all, took 21 us).
#include "common.cuh"

namespace gpuaccept::ddp::gpu::detail {

namespace {

constexpr int kSlices = 16;

__global__ void add_column_sums_kernel(ColumnSumParts parts, const float* __restrict__ partials, int rows) {
  const int cols = parts.count * parts.width;
  __shared__ float slice_sums[kSlices][kWarp];
  const int c = static_cast<int>(blockIdx.x) * kWarp + static_cast<int>(threadIdx.x);
  float sum = 0.f;
  if (c < cols)
    for (int r = static_cast<int>(threadIdx.y); r < rows; r += kSlices)
      sum += partials[static_cast<std::size_t>(r) * cols + c];
  slice_sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  float total = 0.f;
  for (int s = 0; s < kSlices; ++s) total += slice_sums[s][threadIdx.x];
  parts.out[c / parts.width][c % parts.width] += total;
}

}  // namespace

void add_column_sums(const ColumnSumParts& parts, const float* partials, int rows, cudaStream_t stream) {
  require(parts.count >= 1 && parts.count <= kMaxColumnSumParts, "add_column_sums: 1 to 3 parts");
  const int cols = parts.count * parts.width;
  if (rows <= 0 || cols <= 0) return;
  add_column_sums_kernel<<<ceil_div(cols, kWarp), dim3(kWarp, kSlices), 0, stream>>>(parts, partials, rows);
  check_launch("add_column_sums");
}

}  // namespace gpuaccept::ddp::gpu::detail

namespace gpuaccept::ddp::gpu {

std::uint64_t reduction_scratch_generation() { return detail::reduction_scratch_state().generation; }

}  // namespace gpuaccept::ddp::gpu
