// The embedding: token plus position.
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

// One thread per (t, c): it walks the B rows at position t, adds each into dwte at that
// row's token, or at the token's row in row_of_token (atomically: tokens repeat), and their
// sum into dwpe (it alone owns it).
__global__ void encoder_backward_kernel(float* __restrict__ dwte, const int* __restrict__ row_of_token,
                                        float* __restrict__ dwpe, const bf16* __restrict__ dout,
                                        const int* __restrict__ tokens, int B, int T, int C) {
  const std::size_t i = global_thread();
  if (i >= static_cast<std::size_t>(T) * C) return;
  const std::size_t t = i / C, c = i % C;
  float sum = 0.f;
  for (int b = 0; b < B; ++b) {
    const std::size_t n = static_cast<std::size_t>(b) * T + t;
    const float d = __bfloat162float(dout[n * C + c]);
    sum += d;
    const int row = row_of_token ? row_of_token[tokens[n]] : tokens[n];
    atomicAdd(&dwte[static_cast<std::size_t>(row) * C + c], d);
  }
  dwpe[i] += sum;
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
  const std::size_t threads = static_cast<std::size_t>(T) * C;
  encoder_backward_kernel<<<static_cast<unsigned>(ceil_div<std::size_t>(threads, kBlock)), kBlock, 0, stream>>>(
      dwte, row_of_token, dwpe, dout, tokens, B, T, C);
  check_launch("encoder_backward");
}

}  // namespace gpuaccept::ddp::gpu
