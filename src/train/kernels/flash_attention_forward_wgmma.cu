// The attention forward on Hopper's wgmma (forward variant 2; train/flash_attention_kernels.h):
// the math, the grid, the online softmax and the outputs (y, lse) of variant 0
// (flash_attention_forward.cu); the two products read shared memory through wgmma instead of
// ldmatrix + mma.sync. A template on the head size kD (64 or 128).
//
//   per (b, h) and block of 64 queries, one warpgroup, over key blocks 0..own:
//     S (64 x 64)   = Q K^T     m64n64k16 x kD/16, Q and K from shared memory (K-major)
//     online softmax on S in registers (the accumulator places are mma.sync's, per warp)
//     O (64 x kD)  += P V       m64nkDk16 x 4, P from registers (S packed to bf16), V N-major
//   y = O / l, lse = m + log l.
// Shared memory (wgmma.cuh's swizzled tiles, 1024-byte aligned): Q, then K and V twice (in use,
// next). Two CTAs a streaming multiprocessor. It began as tests/gpu/probes' prototype
// (0.97 ms against 0.81 for variant 1 on an H100) and passed variant 1 (0.58 against 0.74 ms)
// once its tile loads stopped dividing every pass (wgmma.cuh's load_tile).
// sm_90a only: elsewhere the kernel traps and flash_wgmma_available() says no.
#include "train/kernels/flash_attention_tiles.cuh"
#include "train/kernels/wgmma.cuh"

namespace gpuaccept::train::flash {
namespace {

namespace wg = train::wgmma;
constexpr int kWgThreads = 128;  // one warpgroup
template <int kD>
constexpr int kForwardWgmmaShared = 5 * wg::kTileBytesOf<kD> + wg::kSmemAlign;

// grid (B*NH, T/64): query_block's layout. Thread (warp w, lane l): rows 16w + l/4 and +8 of the
// block, S's columns and O's channels 8j + 2(l%4), +1 (wgmma.cuh).
template <int kD>
__global__ void __launch_bounds__(kWgThreads, 2) flash_forward_wgmma_kernel(bf16* y, float* lse, const bf16* q,
                                                                           const bf16* k, const bf16* v, int T,
                                                                           int NH, int NKV, int qs, int ks,
                                                                           float scale_log2) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kTileBytes = wg::kTileBytesOf<kD>;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = wg::aligned_smem(smem_raw);
  unsigned char* sq = smem;
  unsigned char* skv = smem + kTileBytes;  // [buffer][k, v]
  const QueryBlock at = query_block<kD>(q, k, v, T, NH, NKV, qs, ks);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, t = lane % 4;
  const int r0 = warp * 16 + lane / 4;

  wg::load_tile<kD>(sq, at.qh + at.qb * at.qtile, at.qs);
  wg::load_tile<kD>(skv, at.kh, at.ks);
  wg::load_tile<kD>(skv + kTileBytes, at.vh, at.ks);
  commit();

  float o[kD / 8][4], s[8][4];  // O (64 x kD), S (64 x 64): wgmma's kD/2 and 32 accumulators a thread
  auto& o_flat = reinterpret_cast<float (&)[kD / 2]>(o);
  auto& s_flat = reinterpret_cast<float (&)[32]>(s);
  zero(o);
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  for (int kb = 0; kb <= at.qb; ++kb) {
    if (kb < at.qb) {  // the other buffer is free since the last block's closing barrier
      unsigned char* next = skv + ((kb + 1) % 2) * 2 * kTileBytes;
      wg::load_tile<kD>(next, at.kh + (kb + 1) * at.ktile, at.ks);
      wg::load_tile<kD>(next + kTileBytes, at.vh + (kb + 1) * at.ktile, at.ks);
      commit();
      wait<1>();
    } else {
      wait<0>();
    }
    wg::fence_async_shared();  // this thread's cp.async writes, to the proxy wgmma reads through
    __syncthreads();
    const unsigned char* sk = skv + (kb % 2) * 2 * kTileBytes;
    const unsigned char* sv = sk + kTileBytes;

    zero(s);
    wg::fence();
#pragma unroll
    for (int step = 0; step < kD / 16; ++step)
      wg::mma_m64n64k16_ss(s_flat, wg::desc_k_major(sq, step), wg::desc_k_major(sk, step), step > 0);
    wg::commit();
    wg::wait<0>();
    if (kb == at.qb) mask_diagonal<true>(s, r0, 0, t, -INFINITY);  // keys after the query
    online_softmax(s, o, m0, m1, l0, l1, scale_log2);

    std::uint32_t pa[16];  // P as A fragments (bf16 pairs), untouched until the product is waited for
#pragma unroll
    for (int i = 0; i < 16; ++i) pa[i] = pack(s_flat[2 * i], s_flat[2 * i + 1]);
    wg::fence();  // o (rescaled) and pa were written by this thread
#pragma unroll
    for (int kk = 0; kk < kBlock / 16; ++kk) wg::mma_rs<kD>(o_flat, pa + 4 * kk, wg::desc_n_major(sv, kk));
    wg::commit();
    wg::wait<0>();
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  finish_rows(y + Tiles<kD>::head_start(at.b, at.h, T, at.ys), at.ys, lse + static_cast<std::size_t>(blockIdx.x) * T,
              o, at.qb * kBlock + r0, m0, m1, l0, l1, t);
#else
  (void)y, (void)lse, (void)q, (void)k, (void)v, (void)T, (void)NH, (void)NKV, (void)qs, (void)ks, (void)scale_log2;
  __trap();  // not built for sm_90a: flash_wgmma_available() keeps the host from launching it
#endif
}

}  // namespace

template <int kD>
FlashKernelResources flash_forward_wgmma_resources() {
  return resources("forward_wgmma", flash_forward_wgmma_kernel<kD>, kWgThreads, kForwardWgmmaShared<kD>);
}

template <int kD>
void launch_flash_forward_wgmma(bf16* y, float* lse, const bf16* q, const bf16* k, const bf16* v, const FlashShape& s,
                                float scale_log2, cudaStream_t stream) {
  require(flash_wgmma_available(), "flash attention: forward variant 2 needs an sm_90a build on an H100/H200");
  static const bool allowed = (allow_shared(flash_forward_wgmma_kernel<kD>, kForwardWgmmaShared<kD>), true);
  (void)allowed;
  flash_forward_wgmma_kernel<kD><<<dim3(s.B * s.NH, s.T / kBlock), kWgThreads, kForwardWgmmaShared<kD>, stream>>>(
      y, lse, q, k, v, s.T, s.NH, s.NKV, static_cast<int>(s.q_row), static_cast<int>(s.kv_row), scale_log2);
  check_launch("flash_attention_forward (wgmma)");
}

template FlashKernelResources flash_forward_wgmma_resources<64>();
template FlashKernelResources flash_forward_wgmma_resources<128>();
template void launch_flash_forward_wgmma<64>(bf16*, float*, const bf16*, const bf16*, const bf16*, const FlashShape&,
                                             float, cudaStream_t);
template void launch_flash_forward_wgmma<128>(bf16*, float*, const bf16*, const bf16*, const bf16*, const FlashShape&,
                                              float, cudaStream_t);

}  // namespace gpuaccept::train::flash
