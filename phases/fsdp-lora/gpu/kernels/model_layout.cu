// The model's copies: the embedding lookup, and attention's layout changes between the
// projections' token-major rows (B,T,H,HD) and the head-major (B,H,T,HD) matrices the batched
// attention matmuls read. One thread per W channels (W = 8, 16-byte accesses, when widths,
// strides and pointers allow; one value otherwise), grid-stride loops.
#include "fsdp-lora/gpu/kernels/common.cuh"

namespace gpuaccept::fsdp::gpu {

namespace {

namespace td = detail::td;

constexpr int kBlock = 256;

using detail::check_launch;
using detail::require;

// out[n, c0 .. c0+W) = embed[tokens[n], c0 .. c0+W)
template <int W>
__global__ void embedding_kernel(bf16* __restrict__ out, const int* __restrict__ tokens, const bf16* __restrict__ embed,
                                 int N, int C) {
  const int groups = C / W;
  const std::size_t items = static_cast<std::size_t>(N) * groups;
  for (std::size_t item = td::global_thread(); item < items; item += td::global_threads()) {
    const std::size_t n = item / groups;
    const std::size_t c0 = (item % groups) * W;
    const std::size_t row = static_cast<std::size_t>(tokens[n]);
    td::copy_bf16<W>(out + n * C + c0, embed + row * C + c0);
  }
}

// Thread `item` covers head-major element ((b*H + h)*T + t)*HD + d0 .. +W; kToHeads copies
// token-major -> head-major, else back.
template <int W, bool kToHeads>
__global__ void heads_kernel(bf16* __restrict__ dst, const bf16* __restrict__ src, int stride, int B, int T, int H,
                             int HD) {
  const int groups = HD / W;
  const std::size_t items = static_cast<std::size_t>(B) * H * T * groups;
  for (std::size_t item = td::global_thread(); item < items; item += td::global_threads()) {
    const std::size_t d0 = (item % groups) * W;
    std::size_t rest = item / groups;
    const std::size_t t = rest % T;
    rest /= T;
    const std::size_t h = rest % H, b = rest / H;
    const std::size_t head_major = ((b * H + h) * T + t) * HD + d0;
    const std::size_t token_major = (b * T + t) * stride + h * HD + d0;
    if constexpr (kToHeads)
      td::copy_bf16<W>(dst + head_major, src + token_major);
    else
      td::copy_bf16<W>(dst + token_major, src + head_major);
  }
}

template <bool kToHeads>
void launch_heads(const char* name, bf16* dst, const bf16* src, int stride, int B, int T, int H, int HD,
                  cudaStream_t stream) {
  require(B >= 0 && T >= 0 && H > 0 && HD > 0, "heads layout: B, T must be >= 0 and H, HD > 0");
  require(static_cast<long long>(stride) >= static_cast<long long>(H) * HD, "heads layout: stride must be >= H*HD");
  const std::size_t n = static_cast<std::size_t>(B) * H * T * HD;
  if (n == 0) return;
  if (HD % 8 == 0 && stride % 8 == 0 && td::aligned16(dst) && td::aligned16(src))
    heads_kernel<8, kToHeads><<<td::grid_for(n / 8, kBlock), kBlock, 0, stream>>>(dst, src, stride, B, T, H, HD);
  else
    heads_kernel<1, kToHeads><<<td::grid_for(n, kBlock), kBlock, 0, stream>>>(dst, src, stride, B, T, H, HD);
  check_launch(name);
}

}  // namespace

void embedding_forward(bf16* out, const int* tokens, const bf16* embed, int N, int C, cudaStream_t stream) {
  require(N >= 0 && C > 0, "embedding_forward: N must be >= 0 and C > 0");
  if (N == 0) return;
  if (C % 8 == 0 && td::aligned16(out) && td::aligned16(embed)) {
    const std::size_t items = static_cast<std::size_t>(N) * (C / 8);
    embedding_kernel<8><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(out, tokens, embed, N, C);
  } else {
    const std::size_t items = static_cast<std::size_t>(N) * C;
    embedding_kernel<1><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(out, tokens, embed, N, C);
  }
  check_launch("embedding_forward");
}

void heads_from_tokens(bf16* dst, const bf16* src, int stride, int B, int T, int H, int HD, cudaStream_t stream) {
  launch_heads<true>("heads_from_tokens", dst, src, stride, B, T, H, HD, stream);
}

void tokens_from_heads(bf16* dst, int stride, const bf16* src, int B, int T, int H, int HD, cudaStream_t stream) {
  launch_heads<false>("tokens_from_heads", dst, src, stride, B, T, H, HD, stream);
}

}  // namespace gpuaccept::fsdp::gpu
