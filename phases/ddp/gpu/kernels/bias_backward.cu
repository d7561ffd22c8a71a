// The bias gradient of a linear layer: column sums of dout (N,OC).
// Block (32, kRows) covers a tile of 32*W columns and a chunk of rows: each warp reads one
// row's 32*W consecutive columns (coalesced), the kRows warps take every kRows-th row,
// their sums meet in shared memory in a fixed order, and each block writes its chunk's sums
// to partials[chunk, o]; add_column_sums adds the chunks up in order into dbias. No atomics:
// the same dout gives the same bits on every run (common.cuh, reduction_scratch).
#include "common.cuh"

namespace gpuaccept::ddp::gpu {

using namespace detail;

namespace {

constexpr int kRows = 8;
constexpr int kTargetBlocks = 528;  // 4 per SM on an H100: enough rows in flight to saturate HBM

// partials[blockIdx.y, o] = sum over this block's rows n of dout[n, o], for its W columns o.
template <int W>
__global__ void bias_backward_kernel(float* __restrict__ partials, const bf16* __restrict__ dout, int N, int OC,
                                     int rows_per_block) {
  __shared__ float partial[kRows][kWarp * W];
  const int o0 = static_cast<int>(blockIdx.x * kWarp + threadIdx.x) * W;  // OC % W == 0: the group is inside the row
  const int n_begin = static_cast<int>(blockIdx.y) * rows_per_block;
  const int n_end = min(N, n_begin + rows_per_block);
  float acc[W] = {};
  if (o0 < OC) {
    for (int n = n_begin + static_cast<int>(threadIdx.y); n < n_end; n += kRows) {
      float x[W];
      load_bf16<W>(x, dout + static_cast<std::size_t>(n) * OC + o0);
#pragma unroll
      for (int k = 0; k < W; ++k) acc[k] += x[k];
    }
  }
#pragma unroll
  for (int k = 0; k < W; ++k) partial[threadIdx.y][threadIdx.x * W + k] = acc[k];
  __syncthreads();
  if (threadIdx.y == 0 && o0 < OC) {
#pragma unroll
    for (int k = 0; k < W; ++k) {
      float sum = 0.f;
      for (int r = 0; r < kRows; ++r) sum += partial[r][threadIdx.x * W + k];
      partials[static_cast<std::size_t>(blockIdx.y) * OC + o0 + k] = sum;
    }
  }
}

template <int W>
void launch(float* dbias, const bf16* dout, int N, int OC, cudaStream_t stream) {
  const int tiles = ceil_div(OC, kWarp * W);
  // Split the rows into chunks so that tiles * chunks is about kTargetBlocks, each chunk
  // at least kRows rows (one per warp) and at most 65535 chunks (gridDim.y's limit).
  int chunks = std::clamp(ceil_div(kTargetBlocks, tiles), 1, ceil_div(N, kRows));
  chunks = std::min(chunks, 65535);
  const int rows_per_block = ceil_div(N, chunks);
  chunks = ceil_div(N, rows_per_block);  // no empty chunk
  auto* partials = static_cast<float*>(reduction_scratch(static_cast<std::size_t>(chunks) * OC * sizeof(float)));
  bias_backward_kernel<W><<<dim3(tiles, chunks), dim3(kWarp, kRows), 0, stream>>>(partials, dout, N, OC, rows_per_block);
  check_launch("bias_backward");
  add_column_sums({{dbias}, 1, OC}, partials, chunks, stream);
}

}  // namespace

void bias_backward(float* dbias, const bf16* dout, int N, int OC, cudaStream_t stream) {
  require(N >= 0 && OC >= 0, "bias_backward: negative size");
  if (N == 0 || OC == 0) return;
  if (OC % 8 == 0 && aligned16(dout))
    launch<8>(dbias, dout, N, OC, stream);
  else
    launch<1>(dbias, dout, N, OC, stream);
  check_launch("bias_backward");
}

void add_block_sums(float* dbias, const float* block_sums, int rows, int OC, cudaStream_t stream) {
  require(rows >= 0 && OC >= 0, "add_block_sums: negative size");
  add_column_sums({{dbias}, 1, OC}, block_sums, rows, stream);
}

}  // namespace gpuaccept::ddp::gpu
