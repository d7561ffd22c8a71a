// Causal grouped-query attention without the T x T matrix in memory, forward (FlashAttention-2,
// Dao 2023) for heads of 64 and 128 and T a multiple of 64 (train/flash_attention_kernels.h
// gives the interface). q, k, v token-major with the rows FlashShape gives, y (B, T, NH, HD);
// query head h reads key/value head h / G, G = NH / NKV.
//
// Per (b, h) and block of queries (variant 0: 64, 4 warps x 16 rows; variant 1: 128, 4 warps x
// 32 rows; variant 2, flash_attention_forward_wgmma.cu: 64 on wgmma), over key blocks 0..own
// (those above the diagonal are skipped):
//   s = q k^T * scale;  m' = max(m, rowmax s);  p = exp(s - m');  l = l e^(m-m') + rowsum p;
//   o = o e^(m-m') + p v;  at the end o /= l and lse = m + log l (kept for backward).
#include "train/kernels/flash_attention_tiles.cuh"

namespace gpuaccept::train {

namespace flash {

// ---- forward -----------------------------------------------------------------------------
// Shared memory: q, then k and v twice (the tile in use and the next one).
template <int kD>
constexpr int kForwardShared = 5 * Tiles<kD>::kTile * static_cast<int>(sizeof(bf16));

// grid (B*NH, T/64): query_block's layout.
template <int kD>
__global__ void __launch_bounds__(kThreads, 2) flash_forward_kernel(bf16* y, float* lse, const bf16* q,
                                                                    const bf16* k, const bf16* v, int T, int NH,
                                                                    int NKV, int qs, int ks, float scale_log2) {
  using Ti = Tiles<kD>;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sq = reinterpret_cast<bf16*>(smem);
  bf16* skv = sq + Ti::kTile;  // [buffer][k, v]
  const QueryBlock at = query_block<kD>(q, k, v, T, NH, NKV, qs, ks);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r = warp * 16 + g;  // this thread's rows, counted from the block's first: r and r + 8

  Ti::load_tile(sq, at.qh + at.qb * at.qtile, at.qs);
  Ti::load_tile(skv, at.kh, at.ks);
  Ti::load_tile(skv + Ti::kTile, at.vh, at.ks);
  commit();

  typename Ti::Operand qa;
  float acc[Ti::kFrags][4], s[8][4];  // o (16 x kD), s (16 x 64 keys)
  zero(acc);
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  for (int kb = 0; kb <= at.qb; ++kb) {
    const bf16* sk = Ti::next_kv_block(skv, at.kh, at.vh, kb, at.qb, at.ktile, at.ks);
    const bf16* sv = sk + Ti::kTile;
    if (kb == 0) Ti::load_a(qa, sq + warp * 16 * Ti::kStride, lane);
    zero(s);
    Ti::mma_abt(s, qa, sk, lane);  // s = q k^T
    if (kb == at.qb) mask_diagonal<true>(s, r, 0, t, -INFINITY);
    online_softmax(s, acc, m0, m1, l0, l1, scale_log2);
    Ti::mma_pb(acc, s, sv, lane);  // o += p v
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  finish_rows(y + Ti::head_start(at.b, at.h, T, at.ys), at.ys, lse + static_cast<std::size_t>(blockIdx.x) * T, acc,
              at.qb * kBlock + r, m0, m1, l0, l1, t);
}

// ---- forward, 128 queries a block (forward variant 1) ------------------------------------
// The same online softmax with each warp on 32 query rows (two 16-row tiles) instead of 16:
// every K and V fragment read from shared memory feeds both tiles' products, so a product
// costs about half the shared-memory reads (FlashAttention-2's 128 x 64 tiles for head size
// 128). Q is read from shared memory a k-step at a time (two tiles in registers would not fit
// beside the accumulators). A warp whose 32 rows all lie before a key block skips it. T % 128.
constexpr int kBlockM = 2 * kBlock;  // 128 queries
template <int kD>
constexpr int kForward128Shared = 6 * Tiles<kD>::kTile * static_cast<int>(sizeof(bf16));  // q (128 rows), k, v twice

// s[i] (16 x 64) += rows 16i .. 16i + 15 (from a_rows on) x B^T, B the 64 rows of a tile.
template <int kD>
__device__ inline void mma_abt2(float (&s)[2][8][4], const bf16* a_rows, const bf16* b, int lane) {
  constexpr int kStride = Tiles<kD>::kStride;
#pragma unroll
  for (int ks = 0; ks < kD / 16; ++ks) {
    uint32_t a0[4], a1[4];
    ldmatrix_x4(a0, a_rows + (lane % 16) * kStride + ks * 16 + (lane / 16) * 8);
    ldmatrix_x4(a1, a_rows + (16 + lane % 16) * kStride + ks * 16 + (lane / 16) * 8);
#pragma unroll
    for (int n2 = 0; n2 < kBlock / 16; ++n2) {
      uint32_t f[4];
      ldmatrix_x4(f, b + (n2 * 16 + (lane / 16) * 8 + lane % 8) * kStride + ks * 16 + ((lane / 8) % 2) * 8);
      mma(s[0][2 * n2], a0, f[0], f[1]);
      mma(s[0][2 * n2 + 1], a0, f[2], f[3]);
      mma(s[1][2 * n2], a1, f[0], f[1]);
      mma(s[1][2 * n2 + 1], a1, f[2], f[3]);
    }
  }
}

// acc[i] (16 x kD) += p[i] (16 x 64, accumulators turned A operands) * V (64 rows of a tile).
template <int kD>
__device__ inline void mma_pb2(float (&acc)[2][kD / 8][4], const float (&p)[2][8][4], const bf16* b, int lane) {
  constexpr int kStride = Tiles<kD>::kStride;
#pragma unroll
  for (int kk = 0; kk < kBlock / 16; ++kk) {
    uint32_t a0[4], a1[4];
    a0[0] = pack(p[0][2 * kk][0], p[0][2 * kk][1]);
    a0[1] = pack(p[0][2 * kk][2], p[0][2 * kk][3]);
    a0[2] = pack(p[0][2 * kk + 1][0], p[0][2 * kk + 1][1]);
    a0[3] = pack(p[0][2 * kk + 1][2], p[0][2 * kk + 1][3]);
    a1[0] = pack(p[1][2 * kk][0], p[1][2 * kk][1]);
    a1[1] = pack(p[1][2 * kk][2], p[1][2 * kk][3]);
    a1[2] = pack(p[1][2 * kk + 1][0], p[1][2 * kk + 1][1]);
    a1[3] = pack(p[1][2 * kk + 1][2], p[1][2 * kk + 1][3]);
#pragma unroll
    for (int d2 = 0; d2 < kD / 16; ++d2) {
      uint32_t f[4];
      ldmatrix_x4_trans(f, b + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * kStride + d2 * 16 + (lane / 16) * 8);
      mma(acc[0][2 * d2], a0, f[0], f[1]);
      mma(acc[0][2 * d2 + 1], a0, f[2], f[3]);
      mma(acc[1][2 * d2], a1, f[0], f[1]);
      mma(acc[1][2 * d2 + 1], a1, f[2], f[3]);
    }
  }
}

// grid (B*NH, T/128): query_block's layout, 128-query blocks.
template <int kD>
__global__ void __launch_bounds__(kThreads, 2) flash_forward128_kernel(bf16* y, float* lse, const bf16* q,
                                                                       const bf16* k, const bf16* v, int T, int NH,
                                                                       int NKV, int qs, int ks, float scale_log2) {
  using Ti = Tiles<kD>;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sq = reinterpret_cast<bf16*>(smem);  // 128 rows, kStride apart (two 64-row tiles back to back)
  bf16* skv = sq + 2 * Ti::kTile;             // [buffer][k, v]
  const QueryBlock at = query_block<kD>(q, k, v, T, NH, NKV, qs, ks);
  const int qb = at.qb;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r = warp * 32 + g;  // this thread's rows from the block's first: r, r + 8 (tile 0), r + 16, r + 24 (tile 1)

  Ti::load_tile(sq, at.qh + (2 * qb) * at.qtile, at.qs);
  Ti::load_tile(sq + Ti::kTile, at.qh + (2 * qb + 1) * at.qtile, at.qs);
  Ti::load_tile(skv, at.kh, at.ks);
  Ti::load_tile(skv + Ti::kTile, at.vh, at.ks);
  commit();

  float acc[2][Ti::kFrags][4], s[2][8][4];
  zero(acc[0]);
  zero(acc[1]);
  float m[2][2] = {{-INFINITY, -INFINITY}, {-INFINITY, -INFINITY}}, l[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
  const int last = 2 * qb + 1;  // the key blocks up to the block's last row
  for (int kb = 0; kb <= last; ++kb) {
    const bf16* sk = Ti::next_kv_block(skv, at.kh, at.vh, kb, last, at.ktile, at.ks);
    const bf16* sv = sk + Ti::kTile;
    const int col0 = kb * kBlock - qb * kBlockM;  // the key block's first key, from the block's first row
    if (col0 <= warp * 32 + 31) {                 // some key at or before this warp's last row
      zero(s[0]);
      zero(s[1]);
      mma_abt2<kD>(s, sq + warp * 32 * Ti::kStride, sk, lane);  // s = q k^T
      if (col0 + kBlock - 1 > warp * 32) {                       // some key after this warp's first row
        mask_diagonal<true>(s[0], r, col0, t, -INFINITY);
        mask_diagonal<true>(s[1], r + 16, col0, t, -INFINITY);
      }
      online_softmax(s[0], acc[0], m[0][0], m[0][1], l[0][0], l[0][1], scale_log2);
      online_softmax(s[1], acc[1], m[1][0], m[1][1], l[1][0], l[1][1], scale_log2);
      mma_pb2<kD>(acc, s, sv, lane);  // o += p v
    }
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
    finish_rows(y + Ti::head_start(at.b, at.h, T, at.ys), at.ys, lse + static_cast<std::size_t>(blockIdx.x) * T,
                acc[i], qb * kBlockM + r + 16 * i, m[i][0], m[i][1], l[i][0], l[i][1], t);
}

template <int kD>
FlashKernelResources forward_resources(int forward_variant) {
  if (forward_variant == 2) return flash_forward_wgmma_resources<kD>();
  return forward_variant == 1 ? resources("forward128", flash_forward128_kernel<kD>, kThreads, kForward128Shared<kD>)
                              : resources("forward", flash_forward_kernel<kD>, kThreads, kForwardShared<kD>);
}
template FlashKernelResources forward_resources<64>(int);
template FlashKernelResources forward_resources<128>(int);

template <int kD>
void launch_forward(bf16* y, float* lse, const bf16* q, const bf16* k, const bf16* v, const FlashShape& s,
                    cudaStream_t stream, int variant) {
  const float scale_log2 = kLog2e / std::sqrt(static_cast<float>(kD));
  const int qs = static_cast<int>(s.q_row), ks = static_cast<int>(s.kv_row);
  if (variant == 2) {
    launch_flash_forward_wgmma<kD>(y, lse, q, k, v, s, scale_log2, stream);
  } else if (variant == 1 && s.T % kBlockM == 0) {
    static const bool allowed = (allow_shared(flash_forward128_kernel<kD>, kForward128Shared<kD>), true);
    (void)allowed;
    flash_forward128_kernel<kD><<<dim3(s.B * s.NH, s.T / kBlockM), kThreads, kForward128Shared<kD>, stream>>>(
        y, lse, q, k, v, s.T, s.NH, s.NKV, qs, ks, scale_log2);
  } else {
    static const bool allowed = (allow_shared(flash_forward_kernel<kD>, kForwardShared<kD>), true);
    (void)allowed;
    flash_forward_kernel<kD><<<dim3(s.B * s.NH, s.T / kBlock), kThreads, kForwardShared<kD>, stream>>>(
        y, lse, q, k, v, s.T, s.NH, s.NKV, qs, ks, scale_log2);
  }
  check_launch("flash_attention_forward");
}

}  // namespace flash

using namespace flash;

bool flash_forward_variant_available(int variant) {
  if (variant == 2) return flash_wgmma_available();
  return variant == 0 || variant == 1;
}

int flash_forward_default_variant() { return flash_forward_variant_available(2) ? 2 : 1; }

void flash_attention_forward(bf16* y, float* lse, const bf16* q, const bf16* k, const bf16* v, const FlashShape& shape,
                             cudaStream_t stream, int variant) {
  check_shape(shape);
  require(td::aligned16(q) && td::aligned16(k) && td::aligned16(v) && td::aligned16(y) && td::aligned16(lse),
          "flash_attention_forward: q, k, v, y, lse must be 16-byte aligned");
  require(variant >= 0 && variant < kFlashForwardVariants, "flash_attention_forward: no such forward variant");
  require(flash_forward_variant_available(variant),
          "flash_attention_forward: variant 2 (wgmma) needs an sm_90a build on a compute capability 9.0 GPU");
  NvtxRange range("flash_attention_forward");
  with_head_dim(shape.HD,
                [&](auto hd) { launch_forward<decltype(hd)::value>(y, lse, q, k, v, shape, stream, variant); });
}

}  // namespace gpuaccept::train
