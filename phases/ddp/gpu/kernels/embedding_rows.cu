// The token embedding's gradient kept as rows of the tokens a step used (gpu/embedding_rows.h
// says why): the map from token to row, and the rows added back into the full gradient.
#include "common.cuh"

namespace gpuaccept::ddp::gpu {

using namespace detail;

namespace {

constexpr int kScanThreads = 1024;
constexpr int kBlock = 256;
// The rows in use are known on the device only: a fixed grid of grid-stride loops, so
// the launch costs the same for 512 rows as for 50304 (a grid sized for every row of the
// vocabulary took ~40 us a call, mostly blocks that found nothing to do).
constexpr unsigned kRowBlocks = 528;

// One block: thread i counts the marked tokens of its contiguous chunk, a block-wide
// inclusive scan (Hillis-Steele) of those counts gives each chunk its first row, and the
// chunk is walked again to number its tokens in increasing order.
__global__ void token_rows_kernel(int* __restrict__ row_of_token, int* __restrict__ token_of_row,
                                  int* __restrict__ count, const unsigned char* __restrict__ present, int V) {
  __shared__ int sums[kScanThreads];
  const int per = (V + kScanThreads - 1) / kScanThreads;
  const int lo = min(V, static_cast<int>(threadIdx.x) * per), hi = min(V, lo + per);
  int mine = 0;
  for (int v = lo; v < hi; ++v) mine += present[v] != 0;
  sums[threadIdx.x] = mine;
  __syncthreads();
  for (int offset = 1; offset < kScanThreads; offset *= 2) {
    const int add = threadIdx.x >= offset ? sums[threadIdx.x - offset] : 0;
    __syncthreads();
    sums[threadIdx.x] += add;
    __syncthreads();
  }
  int row = sums[threadIdx.x] - mine;
  for (int v = lo; v < hi; ++v) {
    if (present[v]) {
      row_of_token[v] = row;
      token_of_row[row++] = v;
    } else {
      row_of_token[v] = -1;
    }
  }
  if (threadIdx.x == kScanThreads - 1) *count = sums[threadIdx.x];
}

// rows[0 .. count*C) = 0, count read on the device.
__global__ void zero_rows_kernel(float* __restrict__ rows, const int* __restrict__ count, int C) {
  const std::size_t n = static_cast<std::size_t>(*count) * C;
  for (std::size_t i = global_thread(); i < n; i += global_threads()) rows[i] = 0.f;
}

// dwte[token_of_row[r], c] += rows[r, c]: each token has one row, so no two threads write
// the same element.
__global__ void add_rows_kernel(float* __restrict__ dwte, const float* __restrict__ rows,
                                const int* __restrict__ token_of_row, const int* __restrict__ count, int C) {
  const std::size_t n = static_cast<std::size_t>(*count) * C;
  for (std::size_t i = global_thread(); i < n; i += global_threads()) {
    const std::size_t r = i / C, c = i % C;
    dwte[static_cast<std::size_t>(token_of_row[r]) * C + c] += rows[i];
  }
}

}  // namespace

void token_rows(int* row_of_token, int* token_of_row, int* count, const unsigned char* present, int V,
                cudaStream_t stream) {
  require(V >= 1, "token_rows: empty vocabulary");
  token_rows_kernel<<<1, kScanThreads, 0, stream>>>(row_of_token, token_of_row, count, present, V);
  check_launch("token_rows");
}

void zero_token_rows(float* rows, const int* count, int max_rows, int C, cudaStream_t stream) {
  require(max_rows >= 0 && C >= 1, "zero_token_rows: bad size");
  zero_rows_kernel<<<std::min(kRowBlocks, grid_for(static_cast<std::size_t>(max_rows) * C, kBlock)), kBlock, 0,
                     stream>>>(rows, count, C);
  check_launch("zero_token_rows");
}

void add_token_rows(float* dwte, const float* rows, const int* token_of_row, const int* count, int max_rows, int C,
                    cudaStream_t stream) {
  require(max_rows >= 0 && C >= 1, "add_token_rows: bad size");
  add_rows_kernel<<<std::min(kRowBlocks, grid_for(static_cast<std::size_t>(max_rows) * C, kBlock)), kBlock, 0,
                    stream>>>(dwte, rows, token_of_row, count, C);
  check_launch("add_token_rows");
}

}  // namespace gpuaccept::ddp::gpu
