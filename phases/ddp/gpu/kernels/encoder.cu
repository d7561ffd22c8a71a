// The embedding: token plus position.
#include <cub/cub.cuh>

#include "common.cuh"

namespace gpuaccept::ddp::gpu {

using namespace detail;

namespace {

constexpr int kBlock = 256;

// out[n, c..c+W) = wte[tokens[n], c..] + wpe[n % T, c..]; one thread per W channels.
template <int W>
__global__ void encoder_forward_kernel(bf16* __restrict__ out, const int* __restrict__ tokens,
                                       const bf16* __restrict__ wte, const bf16* __restrict__ wpe, int N, int T,
                                       int C) {
  const std::size_t per_row = C / W;
  for (std::size_t i = global_thread(); i < N * per_row; i += global_threads()) {
    const std::size_t n = i / per_row, c = (i % per_row) * W;
    const std::size_t t = n % T;
    float x[W], p[W];
    load_bf16<W>(x, wte + static_cast<std::size_t>(tokens[n]) * C + c);
    load_bf16<W>(p, wpe + t * C + c);
#pragma unroll
    for (int k = 0; k < W; ++k) x[k] += p[k];
    store_bf16<W>(out + n * C + c, x);
  }
}

// dwpe: one thread per (t, c) walks the B rows at position t and adds their sum (it alone
// owns dwpe[t, c]).
__global__ void position_backward_kernel(float* __restrict__ dwpe, const bf16* __restrict__ dout, int B, int T,
                                         int C) {
  const std::size_t i = global_thread();
  if (i >= static_cast<std::size_t>(T) * C) return;
  const std::size_t t = i / C, c = i % C;
  float sum = 0.f;
  for (int b = 0; b < B; ++b) sum += __bfloat162float(dout[(static_cast<std::size_t>(b) * T + t) * C + c]);
  dwpe[i] += sum;
}

// dwte: tokens repeat, so several positions add into one row. Without atomics (whose order
// differs from run to run): the positions n are sorted by their row (a stable radix sort, so
// n ascending within a row), and the thread of (first position of a row in that order, c)
// (W channels) sums the row's positions in that order. The other threads have nothing to do.
__global__ void row_keys_kernel(int* __restrict__ keys, int* __restrict__ positions, const int* __restrict__ row_of_token,
                                const int* __restrict__ tokens, int N) {
  const int n = static_cast<int>(global_thread());
  if (n >= N) return;
  keys[n] = row_of_token ? row_of_token[tokens[n]] : tokens[n];
  positions[n] = n;
}

template <int W>
__global__ void token_backward_kernel(float* __restrict__ dwte, const int* __restrict__ sorted_rows,
                                      const int* __restrict__ sorted_positions, const bf16* __restrict__ dout, int N,
                                      int C) {
  const std::size_t per_row = static_cast<std::size_t>(C / W);
  const std::size_t i = global_thread();
  if (i >= static_cast<std::size_t>(N) * per_row) return;
  const int k = static_cast<int>(i / per_row);
  const int c = static_cast<int>(i % per_row) * W;
  const int row = sorted_rows[k];
  if (k > 0 && sorted_rows[k - 1] == row) return;  // not the first of its row
  float sum[W] = {};
  for (int j = k; j < N && sorted_rows[j] == row; ++j) {
    float d[W];
    load_bf16<W>(d, dout + static_cast<std::size_t>(sorted_positions[j]) * C + c);
#pragma unroll
    for (int w = 0; w < W; ++w) sum[w] += d[w];
  }
  float* out = dwte + static_cast<std::size_t>(row) * C + c;
#pragma unroll
  for (int w = 0; w < W; ++w) out[w] += sum[w];
}

}  // namespace

void encoder_forward(bf16* out, const int* tokens, const bf16* wte, const bf16* wpe, int B, int T, int C,
                     cudaStream_t stream) {
  require(B >= 0 && T >= 0 && C >= 0, "encoder_forward: negative size");
  const int N = B * T;
  if (N == 0 || C == 0) return;
  if (C % 8 == 0 && aligned16(out) && aligned16(wte) && aligned16(wpe)) {
    encoder_forward_kernel<8><<<grid_for(static_cast<std::size_t>(N) * C / 8, kBlock), kBlock, 0, stream>>>(
        out, tokens, wte, wpe, N, T, C);
  } else {
    encoder_forward_kernel<1><<<grid_for(static_cast<std::size_t>(N) * C, kBlock), kBlock, 0, stream>>>(
        out, tokens, wte, wpe, N, T, C);
  }
  check_launch("encoder_forward");
}

void encoder_backward(float* dwte, const int* row_of_token, float* dwpe, const bf16* dout, const int* tokens, int B,
                      int T, int C, cudaStream_t stream) {
  require(B >= 0 && T >= 0 && C >= 0, "encoder_backward: negative size");
  if (B == 0 || T == 0 || C == 0) return;
  const int N = B * T;
  position_backward_kernel<<<grid_for(static_cast<std::size_t>(T) * C, kBlock), kBlock, 0, stream>>>(dwpe, dout, B, T, C);
  check_launch("encoder_backward (positions)");

  // The sort's buffers in the reduction scratch (common.cuh): keys and positions in and out,
  // then CUB's temporary storage.
  std::size_t temp_bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, static_cast<const int*>(nullptr), static_cast<int*>(nullptr),
                                  static_cast<const int*>(nullptr), static_cast<int*>(nullptr), N);
  const std::size_t ints = 4 * static_cast<std::size_t>(N);
  const std::size_t temp_at = (ints * sizeof(int) + 255) / 256 * 256;
  auto* scratch = static_cast<char*>(reduction_scratch(temp_at + temp_bytes));
  int* keys = reinterpret_cast<int*>(scratch);
  int* positions = keys + N;
  int* sorted_keys = positions + N;
  int* sorted_positions = sorted_keys + N;
  row_keys_kernel<<<grid_for(static_cast<std::size_t>(N), kBlock), kBlock, 0, stream>>>(keys, positions, row_of_token,
                                                                                        tokens, N);
  check_launch("encoder_backward (row keys)");
  const cudaError_t rc = cub::DeviceRadixSort::SortPairs(scratch + temp_at, temp_bytes, keys, sorted_keys, positions,
                                                         sorted_positions, N, 0, static_cast<int>(sizeof(int) * 8), stream);
  require(rc == cudaSuccess, "encoder_backward: cub::DeviceRadixSort::SortPairs failed");
  if (C % 8 == 0 && aligned16(dout))
    token_backward_kernel<8><<<grid_for(static_cast<std::size_t>(N) * C / 8, kBlock), kBlock, 0, stream>>>(
        dwte, sorted_keys, sorted_positions, dout, N, C);
  else
    token_backward_kernel<1><<<grid_for(static_cast<std::size_t>(N) * C, kBlock), kBlock, 0, stream>>>(
        dwte, sorted_keys, sorted_positions, dout, N, C);
  check_launch("encoder_backward (tokens)");
}

}  // namespace gpuaccept::ddp::gpu
