// Attention's layout changes: token-major (B,T,NH,HS) rows as the matmuls see them, and
// head-major (B,NH,T,HS) for the per-head score matmuls. Pure copies; one thread per W
// channels of one head at one position (W = 8, 16 bytes, when HS % 8 == 0 and aligned).
#include "common.cuh"

namespace gpuaccept::ddp::gpu {

using namespace detail;

namespace {

constexpr int kBlock = 256;

// Thread i covers head-major element i*W = ((b*NH + h)*T + t)*HS + d; this is where the
// same element sits in a token-major tensor of `parts` (NH,HS) groups per row (qkv: 3).
struct Index {
  std::size_t head_major, token_major;
};
__device__ inline Index index_of(std::size_t i, int W, int T, int NH, int HS, int parts) {
  const std::size_t per_head_row = HS / W;
  const std::size_t d = (i % per_head_row) * W;
  std::size_t rest = i / per_head_row;
  const std::size_t t = rest % T;
  rest /= T;
  const std::size_t h = rest % NH, b = rest / NH;
  const std::size_t C = static_cast<std::size_t>(NH) * HS;
  return {i * W, (b * T + t) * parts * C + h * HS + d};
}

// q,k,v[b,h,t,:] = qkv[b,t,{0,1,2},h,:]
template <int W>
__global__ void split_qkv_kernel(bf16* __restrict__ q, bf16* __restrict__ k, bf16* __restrict__ v,
                                 const bf16* __restrict__ qkv, std::size_t threads, int T, int NH, int HS) {
  const std::size_t C = static_cast<std::size_t>(NH) * HS;
  for (std::size_t i = global_thread(); i < threads; i += global_threads()) {
    const Index at = index_of(i, W, T, NH, HS, 3);
    copy_bf16<W>(q + at.head_major, qkv + at.token_major);
    copy_bf16<W>(k + at.head_major, qkv + at.token_major + C);
    copy_bf16<W>(v + at.head_major, qkv + at.token_major + 2 * C);
  }
}

// dqkv[b,t,{0,1,2},h,:] = dq,dk,dv[b,h,t,:]
template <int W>
__global__ void merge_qkv_kernel(bf16* __restrict__ dqkv, const bf16* __restrict__ dq, const bf16* __restrict__ dk,
                                 const bf16* __restrict__ dv, std::size_t threads, int T, int NH, int HS) {
  const std::size_t C = static_cast<std::size_t>(NH) * HS;
  for (std::size_t i = global_thread(); i < threads; i += global_threads()) {
    const Index at = index_of(i, W, T, NH, HS, 3);
    copy_bf16<W>(dqkv + at.token_major, dq + at.head_major);
    copy_bf16<W>(dqkv + at.token_major + C, dk + at.head_major);
    copy_bf16<W>(dqkv + at.token_major + 2 * C, dv + at.head_major);
  }
}

// to_heads: y[b,h,t,:] = out[b,t,h,:] (split_heads); otherwise out[b,t,h,:] = y[b,h,t,:] (merge_heads)
template <int W, bool kToHeads>
__global__ void heads_kernel(bf16* __restrict__ dst, const bf16* __restrict__ src, std::size_t threads, int T,
                             int NH, int HS) {
  for (std::size_t i = global_thread(); i < threads; i += global_threads()) {
    const Index at = index_of(i, W, T, NH, HS, 1);
    if constexpr (kToHeads)
      copy_bf16<W>(dst + at.head_major, src + at.token_major);
    else
      copy_bf16<W>(dst + at.token_major, src + at.head_major);
  }
}

void check_shape(const char* name, int B, int T, int NH, int HS) {
  if (B < 0 || T < 0 || NH < 0 || HS < 0) throw std::invalid_argument(std::string("ddp kernels: ") + name + ": negative size");
}
std::size_t elements(int B, int T, int NH, int HS) {
  return static_cast<std::size_t>(B) * T * NH * HS;
}

}  // namespace

void split_qkv(bf16* q, bf16* k, bf16* v, const bf16* qkv, int B, int T, int NH, int HS, cudaStream_t stream) {
  check_shape("split_qkv", B, T, NH, HS);
  const std::size_t n = elements(B, T, NH, HS);
  if (n == 0) return;
  if (HS % 8 == 0 && aligned16(q) && aligned16(k) && aligned16(v) && aligned16(qkv))
    split_qkv_kernel<8><<<grid_for(n / 8, kBlock), kBlock, 0, stream>>>(q, k, v, qkv, n / 8, T, NH, HS);
  else
    split_qkv_kernel<1><<<grid_for(n, kBlock), kBlock, 0, stream>>>(q, k, v, qkv, n, T, NH, HS);
  check_launch("split_qkv");
}

void merge_qkv(bf16* dqkv, const bf16* dq, const bf16* dk, const bf16* dv, int B, int T, int NH, int HS,
               cudaStream_t stream) {
  check_shape("merge_qkv", B, T, NH, HS);
  const std::size_t n = elements(B, T, NH, HS);
  if (n == 0) return;
  if (HS % 8 == 0 && aligned16(dqkv) && aligned16(dq) && aligned16(dk) && aligned16(dv))
    merge_qkv_kernel<8><<<grid_for(n / 8, kBlock), kBlock, 0, stream>>>(dqkv, dq, dk, dv, n / 8, T, NH, HS);
  else
    merge_qkv_kernel<1><<<grid_for(n, kBlock), kBlock, 0, stream>>>(dqkv, dq, dk, dv, n, T, NH, HS);
  check_launch("merge_qkv");
}

void merge_heads(bf16* out, const bf16* y, int B, int T, int NH, int HS, cudaStream_t stream) {
  check_shape("merge_heads", B, T, NH, HS);
  const std::size_t n = elements(B, T, NH, HS);
  if (n == 0) return;
  if (HS % 8 == 0 && aligned16(out) && aligned16(y))
    heads_kernel<8, false><<<grid_for(n / 8, kBlock), kBlock, 0, stream>>>(out, y, n / 8, T, NH, HS);
  else
    heads_kernel<1, false><<<grid_for(n, kBlock), kBlock, 0, stream>>>(out, y, n, T, NH, HS);
  check_launch("merge_heads");
}

void split_heads(bf16* y, const bf16* out, int B, int T, int NH, int HS, cudaStream_t stream) {
  check_shape("split_heads", B, T, NH, HS);
  const std::size_t n = elements(B, T, NH, HS);
  if (n == 0) return;
  if (HS % 8 == 0 && aligned16(y) && aligned16(out))
    heads_kernel<8, true><<<grid_for(n / 8, kBlock), kBlock, 0, stream>>>(y, out, n / 8, T, NH, HS);
  else
    heads_kernel<1, true><<<grid_for(n, kBlock), kBlock, 0, stream>>>(y, out, n, T, NH, HS);
  check_launch("split_heads");
}

}  // namespace gpuaccept::ddp::gpu
