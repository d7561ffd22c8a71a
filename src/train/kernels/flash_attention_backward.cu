// Causal grouped-query attention without the T x T matrix in memory, backward (FlashAttention-2,
// Dao 2023) for heads of 64 and 128 and T a multiple of 64 (train/flash_attention_kernels.h
// gives the interface), from the forward's y and lse (flash_attention_forward.cu). q, k, v and
// dq, dk, dv token-major with the rows FlashShape gives, y and dy (B, T, NH, HD); query head h
// reads key/value head h / G, G = NH / NKV.
//
// dS = P o (dP - delta), delta = rowsum(dO o O), P = exp(s - lse) recomputed:
//   per (b, kv head) and block of 64 keys:  dV = sum_{g, i} P^T dO,  dK = scale sum_{g, i} dS^T Q
//     over the G query heads g of the group and the query blocks i >= own: the group's sum is
//     the CTA's own loop, so no two CTAs write the same rows of dK and dV;
//   per (b, h) and block of 64 queries:     dQ = scale sum_j dS K   (key blocks j <= own).
// No atomics anywhere: every value is summed in a fixed order, the same every run.
// Variants (train/flash_attention_kernels.h, GPUACCEPT_FLASH_BWD in the phases): the dK/dV
// kernel with Q/dO double-buffered (0: 1 CTA/SM) or single-buffered (1: 2 CTAs/SM) and a dQ
// kernel that computes P and dP again (seven products a tile in all); or (2, the default off
// Hopper) the single-buffered dK/dV kernel writing its dS^T tiles (bf16) to a workspace and a dQ
// kernel that only sums dS K from them: five products a tile, no waits, the same order every
// run; or (3, the default on an H100/H200) variant 2's two passes on Hopper's wgmma
// (flash_attention_backward_wgmma.cu, sm_90a; this file's delta kernel runs first).
// Two fused variants (dQ summed in the dK/dV kernel in key-block order through an fp32
// workspace and per-tile counters) measured slower (4.16 and 3.78 ms against 3.35 on an H100,
// 2026-11-25: the ordered sums wait on one another) and were removed on 2026-11-26.
#include "train/kernels/attention_delta.cuh"
#include "train/kernels/flash_attention_tiles.cuh"

namespace gpuaccept::train {

namespace flash {
namespace {

// ---- backward: dK, dV -----------------------------------------------------------------------
// One CTA per (b, kv head, block of 64 keys), looping over the G query heads of the group and,
// for each, the query blocks at or after its own. Shared memory: k, v; then q, dO, lse and
// delta kBuffers times (2: in use, next -- the next step's loads overlap this step's products;
// 1: the next step is loaded after this one, and 2 CTAs per SM hide the loads); then P^T and
// dS^T (64 keys x 64 queries, bf16). 8 warps share the key block: warp (kw, half) computes P^T
// and dS^T for keys 16 kw.. and queries 32 half.., puts them in shared memory (bf16), and then
// accumulates dV and dK for keys 16 kw.. and head channels (kD/2) half..: half the
// accumulators a thread. kStoreDs: each dS^T tile also goes to the workspace, for the dQ kernel
// that only sums dS K (variant 2).
constexpr int kRowValuesCount = 2 * kBlock;  // floats: lse and delta of one query block
template <int kD, int kBuffers>
constexpr int dkdv_shared_bytes() {
  return (2 * Tiles<kD>::kTile + kBuffers * 2 * Tiles<kD>::kTile + 2 * kBlock * kPStride) *
             static_cast<int>(sizeof(bf16)) +
         kBuffers * kRowValuesCount * static_cast<int>(sizeof(float));
}

// The dS^T tile in shared memory (rows kPStride apart) to its place in the workspace.
__device__ inline void store_ds_tile(bf16* dst, const bf16* sds) {
  for (int i = threadIdx.x; i < kBlock * kBlock / 8; i += blockDim.x) {
    const int row = i / (kBlock / 8), col = (i % (kBlock / 8)) * 8;
    *reinterpret_cast<uint4*>(dst + row * kBlock + col) = *reinterpret_cast<const uint4*>(sds + row * kPStride + col);
  }
}

// grid (B*NKV, T/64): blockIdx.x = b*NKV + kv head, blockIdx.y the key block (block 0 sees
// every query: the longest first).
template <int kD, int kBuffers, int kMinBlocks, bool kStoreDs>
__global__ void __launch_bounds__(kDkdvThreads, kMinBlocks) flash_backward_dkdv_kernel(
    bf16* dk, bf16* dv, bf16* ds, const bf16* q, const bf16* k, const bf16* v, const bf16* dy, const float* lse,
    const float* delta, int T, int NH, int NKV, int qs, int ks, float scale, float scale_log2) {
  using Ti = Tiles<kD>;
  constexpr int kTile = Ti::kTile, kStride = Ti::kStride, kHalf = kD / 2;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sk = reinterpret_cast<bf16*>(smem);
  bf16* sv = sk + kTile;
  bf16* sqdo = sv + kTile;                  // [buffer][q, dO]
  bf16* sp = sqdo + kBuffers * 2 * kTile;   // P^T  (64 keys x 64 queries)
  bf16* sds = sp + kBlock * kPStride;       // dS^T (64 keys x 64 queries)
  float* srow = reinterpret_cast<float*>(sds + kBlock * kPStride);  // [buffer][lse, delta]
  const int G = NH / NKV;
  const int b = blockIdx.x / NKV, kvh = blockIdx.x % NKV;
  const int kb = blockIdx.y;
  const int ys = NH * kD;  // rows of dy
  const std::size_t qtile = static_cast<std::size_t>(kBlock) * qs, ytile = static_cast<std::size_t>(kBlock) * ys;
  const std::size_t ktile = static_cast<std::size_t>(kBlock) * ks;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int kw = warp % 4, half = warp / 4;  // keys 16 kw .. +16; queries (then head channels) of this half
  const int r = kw * 16 + g;                 // this thread's keys, counted from the block's first: r and r + 8
  const int blocks = T / kBlock, per_head = blocks - kb, steps = G * per_head;

  // Step i: query head kvh * G + i / per_head, query block kb + i % per_head.
  auto step_head = [&](int i) { return kvh * G + i / per_head; };
  auto step_block = [&](int i) { return kb + i % per_head; };
  auto load_step = [&](int i, int buf) {
    const int h = step_head(i), qb = step_block(i);
    bf16* dst = sqdo + buf * 2 * kTile;
    Ti::template load_tile<kDkdvThreads>(dst, q + Ti::head_start(b, h, T, qs) + qb * qtile, qs);
    Ti::template load_tile<kDkdvThreads>(dst + kTile, dy + Ti::head_start(b, h, T, ys) + qb * ytile, ys);
    const std::size_t rows = (static_cast<std::size_t>(b) * NH + h) * T + static_cast<std::size_t>(qb) * kBlock;
    load_row_values(srow + buf * kRowValuesCount, lse + rows);
    load_row_values(srow + buf * kRowValuesCount + kBlock, delta + rows);
    commit();
  };
  Ti::template load_tile<kDkdvThreads>(sk, k + Ti::head_start(b, kvh, T, ks) + kb * ktile, ks);
  Ti::template load_tile<kDkdvThreads>(sv, v + Ti::head_start(b, kvh, T, ks) + kb * ktile, ks);
  load_step(0, 0);  // one group with k and v

  float dk_acc[kHalf / 8][4], dv_acc[kHalf / 8][4];  // keys r, r + 8 x head channels kHalf half + (8n + 2t, +1)
  zero(dk_acc);
  zero(dv_acc);
  for (int i = 0; i < steps; ++i) {
    const int buf = kBuffers == 2 ? i % 2 : 0, qb = step_block(i);
    if (kBuffers == 2 && i + 1 < steps) {
      load_step(i + 1, 1 - buf);
      wait<1>();
    } else {
      wait<0>();
    }
    __syncthreads();
    const bf16* sq = sqdo + buf * 2 * kTile;
    const bf16* sdo = sq + kTile;
    const float* sl = srow + buf * kRowValuesCount;
    const float* sd = sl + kBlock;
    // P^T (16 keys x 32 queries) = exp(k q^T * scale - lse[query]), 0 where query < key
    float p[4][4], dp[4][4];
    zero(p);
    Ti::mma_abt_smem(p, sk + kw * 16 * kStride, sq + half * 32 * kStride, lane);
    // dP^T (16 keys x 32 queries) = v dO^T
    zero(dp);
    Ti::mma_abt_smem(dp, sv + kw * 16 * kStride, sdo + half * 32 * kStride, lane);
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int col = half * 32 + n * 8 + 2 * t + j;
        const float l2 = sl[col] * kLog2e, d = sd[col];
        p[n][j] = exp2f(fmaf(p[n][j], scale_log2, -l2));
        p[n][2 + j] = exp2f(fmaf(p[n][2 + j], scale_log2, -l2));
        dp[n][j] = dp[n][j] - d;
        dp[n][2 + j] = dp[n][2 + j] - d;
      }
    if (qb == kb) mask_diagonal<false>(p, r, half * 32, t, 0.f);
#pragma unroll
    for (int n = 0; n < 4; ++n) {
      const int col = half * 32 + n * 8 + 2 * t;
      // dS^T = P^T (dP^T - delta[query])
      *reinterpret_cast<__nv_bfloat162*>(sp + r * kPStride + col) = __floats2bfloat162_rn(p[n][0], p[n][1]);
      *reinterpret_cast<__nv_bfloat162*>(sp + (r + 8) * kPStride + col) = __floats2bfloat162_rn(p[n][2], p[n][3]);
      *reinterpret_cast<__nv_bfloat162*>(sds + r * kPStride + col) =
          __floats2bfloat162_rn(p[n][0] * dp[n][0], p[n][1] * dp[n][1]);
      *reinterpret_cast<__nv_bfloat162*>(sds + (r + 8) * kPStride + col) =
          __floats2bfloat162_rn(p[n][2] * dp[n][2], p[n][3] * dp[n][3]);
    }
    __syncthreads();  // P^T and dS^T complete
    Ti::mma_sb(dv_acc, sp + kw * 16 * kPStride, sdo + half * kHalf, lane);   // dV += P^T dO
    Ti::mma_sb(dk_acc, sds + kw * 16 * kPStride, sq + half * kHalf, lane);   // dK += dS^T Q
    if constexpr (kStoreDs) store_ds_tile(ds + ds_tile_offset(b * NH + step_head(i), blocks, qb, kb), sds);
    __syncthreads();  // every warp is done with this buffer and P^T, dS^T before they are refilled
    if (kBuffers == 1 && i + 1 < steps) load_step(i + 1, 0);
  }
  const std::size_t out = Ti::head_start(b, kvh, T, ks) + static_cast<std::size_t>(half) * kHalf;
  store_rows(dk + out, ks, dk_acc, kb * kBlock + r, scale, scale, t);
  store_rows(dv + out, ks, dv_acc, kb * kBlock + r, 1.f, 1.f, t);
}

// acc (16 x 8ND) += A (16 x 64) * B (64 rows of a tile from `b` on), A stored transposed in
// shared memory: A[m][k] at a_cols[k * kPStride + m] (a_cols at the first of the 16 columns m).
template <int kD, int ND>
__device__ inline void mma_tsb(float (&acc)[ND][4], const bf16* a_cols, const bf16* b, int lane) {
#pragma unroll
  for (int kk = 0; kk < kBlock / 16; ++kk) {
    uint32_t a[4];
    ldmatrix_x4_trans(a, a_cols + (kk * 16 + lane % 8 + (lane / 16) * 8) * kPStride + ((lane / 8) % 2) * 8);
    Tiles<kD>::mma_b_rows(acc, a, b, kk, lane);
  }
}

// ---- backward: dQ --------------------------------------------------------------------------
// One CTA per (b, h, block of 64 queries; 4 warps x 16 queries), over the key blocks it sees.
// Shared memory: q, dO, then k and v twice (in use, next).
template <int kD>
constexpr int kDqShared = 6 * Tiles<kD>::kTile * static_cast<int>(sizeof(bf16));

template <int kD>
__global__ void __launch_bounds__(kThreads, 2) flash_backward_dq_kernel(bf16* dq, const bf16* q, const bf16* k,
                                                                        const bf16* v, const bf16* dy,
                                                                        const float* lse, const float* delta, int T,
                                                                        int NH, int NKV, int qs, int ks, float scale,
                                                                        float scale_log2) {
  using Ti = Tiles<kD>;
  constexpr int kTile = Ti::kTile, kStride = Ti::kStride;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sq = reinterpret_cast<bf16*>(smem);
  bf16* sdo = sq + kTile;
  bf16* skv = sdo + kTile;  // [buffer][k, v]
  const int b = blockIdx.x / NH, h = blockIdx.x % NH, kvh = h / (NH / NKV);
  const int qb = gridDim.y - 1 - blockIdx.y;
  const int ys = NH * kD;
  const std::size_t ktile = static_cast<std::size_t>(kBlock) * ks;
  const bf16* kh = k + Ti::head_start(b, kvh, T, ks);
  const bf16* vh = v + Ti::head_start(b, kvh, T, ks);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r = warp * 16 + g;
  const int row0 = qb * kBlock + r;

  Ti::load_tile(sq, q + Ti::head_start(b, h, T, qs) + static_cast<std::size_t>(qb) * kBlock * qs, qs);
  Ti::load_tile(sdo, dy + Ti::head_start(b, h, T, ys) + static_cast<std::size_t>(qb) * kBlock * ys, ys);
  Ti::load_tile(skv, kh, ks);
  Ti::load_tile(skv + kTile, vh, ks);
  commit();
  const float* L = lse + static_cast<std::size_t>(blockIdx.x) * T;
  const float* D = delta + static_cast<std::size_t>(blockIdx.x) * T;
  const float l0 = L[row0] * kLog2e, l1 = L[row0 + 8] * kLog2e, d0 = D[row0], d1 = D[row0 + 8];

  float dq_acc[Ti::kFrags][4], p[8][4], dp[8][4];
  zero(dq_acc);
  for (int kb = 0; kb <= qb; ++kb) {
    const bf16* sk = Ti::next_kv_block(skv, kh, vh, kb, qb, ktile, ks);
    const bf16* sv = sk + kTile;
    zero(p);
    Ti::mma_abt_smem(p, sq + warp * 16 * kStride, sk, lane);  // q k^T
    zero(dp);
    Ti::mma_abt_smem(dp, sdo + warp * 16 * kStride, sv, lane);  // dO v^T
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        p[n][j] = exp2f(fmaf(p[n][j], scale_log2, -l0));
        p[n][2 + j] = exp2f(fmaf(p[n][2 + j], scale_log2, -l1));
      }
    if (kb == qb) mask_diagonal<true>(p, r, 0, t, 0.f);
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        dp[n][j] = p[n][j] * (dp[n][j] - d0);  // dS
        dp[n][2 + j] = p[n][2 + j] * (dp[n][2 + j] - d1);
      }
    Ti::mma_pb(dq_acc, dp, sk, lane);  // dQ += dS k
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  store_rows(dq + Ti::head_start(b, h, T, qs), qs, dq_acc, row0, scale, scale, t);
}

// ---- backward: dQ from dS (variant 2) ----------------------------------------------------
// dQ = scale sum_j dS_j K_j over the key blocks j <= own, from the dS^T tiles the dK/dV kernel
// wrote (the bf16 values its dK product used): one product a tile where the dQ kernel above
// recomputes P and dP first (three). Summed in key-block order inside one CTA: the same bits
// every run. One CTA per (b, h, block of 64 queries; 4 warps x 16 queries), the longest first;
// K and dS^T tiles double-buffered.
template <int kD>
constexpr int kDqFromDsShared = (2 * Tiles<kD>::kTile + 2 * kBlock * kPStride) * static_cast<int>(sizeof(bf16));

// A 64 x 64 dS^T tile of the workspace into shared memory (rows kPStride apart).
__device__ inline void load_ds_tile(bf16* dst, const bf16* src) {
  for (int i = threadIdx.x; i < kBlock * kBlock / 8; i += blockDim.x) {
    const int row = i / (kBlock / 8), col = (i % (kBlock / 8)) * 8;
    copy_async16(dst + row * kPStride + col, src + row * kBlock + col);
  }
}

template <int kD>
__global__ void __launch_bounds__(kThreads, 3) flash_backward_dq_from_ds_kernel(bf16* dq, const bf16* ds,
                                                                               const bf16* k, int T, int NH, int NKV,
                                                                               int qs, int ks, float scale) {
  using Ti = Tiles<kD>;
  constexpr int kTile = Ti::kTile;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sk = reinterpret_cast<bf16*>(smem);  // [buffer] K tile
  bf16* sds = sk + 2 * kTile;                 // [buffer] dS^T tile
  const DsQueryBlock at = ds_query_block<kD>(ds, k, T, NH, NKV, ks);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  Ti::load_tile(sk, at.kh, at.ks);
  load_ds_tile(sds, at.dsq);
  commit();
  float dq_acc[Ti::kFrags][4];
  zero(dq_acc);
  for (int kb = 0; kb <= at.qb; ++kb) {
    if (kb < at.qb) {  // the other buffer is free since the last block's closing barrier
      const int next = (kb + 1) % 2;
      Ti::load_tile(sk + next * kTile, at.kh + (kb + 1) * at.ktile, at.ks);
      load_ds_tile(sds + next * kBlock * kPStride, at.dsq + static_cast<std::size_t>(kb + 1) * kBlock * kBlock);
      commit();
      wait<1>();
    } else {
      wait<0>();
    }
    __syncthreads();
    const int cur = kb % 2;
    mma_tsb<kD>(dq_acc, sds + cur * kBlock * kPStride + warp * 16, sk + cur * kTile, lane);  // dQ += dS K
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  store_rows(dq + Ti::head_start(at.b, at.h, T, qs), qs, dq_acc, at.qb * kBlock + warp * 16 + g, scale, scale, t);
}

// The backward variants (flash_attention_kernels.h): the dK/dV kernel's staging buffers, the
// CTAs per SM it is compiled for, and whether it stores dS for the dQ-from-dS kernel.
template <int kD, int kBuffers, int kMinBlocks, bool kStoreDs>
struct BackwardVariant {
  static constexpr int kShared = dkdv_shared_bytes<kD, kBuffers>();
  static constexpr auto kernel = flash_backward_dkdv_kernel<kD, kBuffers, kMinBlocks, kStoreDs>;
  static constexpr bool stores_ds = kStoreDs;
};
static_assert(kFlashBackwardVariants == 4);  // 3: variant 2 with both kernels on wgmma

// f(Variant) for the mma.sync variant numbered `variant` (0..2).
template <int kD, typename F>
void with_variant(int variant, F&& f) {
  switch (variant) {
    case 0: f(BackwardVariant<kD, 2, 1, false>{}); break;  // double-buffered dK/dV, 1 CTA/SM; dQ kernel
    case 1: f(BackwardVariant<kD, 1, 2, false>{}); break;  // single-buffered dK/dV, 2 CTAs/SM; dQ kernel
    case 2: f(BackwardVariant<kD, 1, 2, true>{}); break;   // 1, writing dS^T; dQ from it (one product)
    default: require(false, "flash attention: mma.sync backward variant out of range (0..2)");
  }
}

template <int kD>
int backward_resources(int variant, FlashKernelResources* out) {
  if (variant == 3) return flash_backward_wgmma_resources<kD>(out);
  int n = 0;
  with_variant<kD>(variant, [&](auto v) {
    using V = decltype(v);
    out[n++] = resources(V::stores_ds ? "dkdv_ds" : "dkdv", V::kernel, kDkdvThreads, V::kShared);
    if (V::stores_ds)
      out[n++] = resources("dq_from_ds", flash_backward_dq_from_ds_kernel<kD>, kThreads, kDqFromDsShared<kD>);
    else
      out[n++] = resources("dq", flash_backward_dq_kernel<kD>, kThreads, kDqShared<kD>);
  });
  return n;
}

template <int kD>
void launch_backward(bf16* dq, bf16* dk, bf16* dv, float* delta, const bf16* dy, const bf16* y, const float* lse,
                     const bf16* q, const bf16* k, const bf16* v, const FlashShape& s, cudaStream_t stream, int variant,
                     bf16* ds_workspace, const FlashColumnSums& sums) {
  static bool allowed[kFlashBackwardVariants] = {};
  if (!allowed[variant]) {
    if (variant != 3)
      with_variant<kD>(variant, [](auto v) { allow_shared(decltype(v)::kernel, decltype(v)::kShared); });
    allow_shared(flash_backward_dq_kernel<kD>, kDqShared<kD>);
    allow_shared(flash_backward_dq_from_ds_kernel<kD>, kDqFromDsShared<kD>);
    allowed[variant] = true;
  }
  const float scale = 1.f / std::sqrt(static_cast<float>(kD));
  const int qs = static_cast<int>(s.q_row), ks = static_cast<int>(s.kv_row);
  td::launch_attention_delta<kD>(delta, dy, y, s.B, s.T, s.NH, stream);  // rowsum(dy o y)
  check_launch("flash_attention_backward (delta)");
  if (variant == 3) {  // both kernels on wgmma
    launch_flash_backward_wgmma<kD>(dq, dk, dv, ds_workspace, q, k, v, dy, lse, delta, s, scale, sums, stream);
    return;
  }
  with_variant<kD>(variant, [&](auto vv) {
    using V = decltype(vv);
    const auto kernel = V::kernel;
    kernel<<<dim3(s.B * s.NKV, s.T / kBlock), kDkdvThreads, V::kShared, stream>>>(
        dk, dv, ds_workspace, q, k, v, dy, lse, delta, s.T, s.NH, s.NKV, qs, ks, scale, scale * kLog2e);
  });
  check_launch("flash_attention_backward (dk, dv)");
  if (flash_backward_stores_ds(variant)) {
    flash_backward_dq_from_ds_kernel<kD><<<dim3(s.B * s.NH, s.T / kBlock), kThreads, kDqFromDsShared<kD>, stream>>>(
        dq, ds_workspace, k, s.T, s.NH, s.NKV, qs, ks, scale);
    check_launch("flash_attention_backward (dq from ds)");
  } else {
    flash_backward_dq_kernel<kD><<<dim3(s.B * s.NH, s.T / kBlock), kThreads, kDqShared<kD>, stream>>>(
        dq, q, k, v, dy, lse, delta, s.T, s.NH, s.NKV, qs, ks, scale, scale * kLog2e);
    check_launch("flash_attention_backward (dq)");
  }
}

}  // namespace
}  // namespace flash

using namespace flash;

bool flash_backward_stores_ds(int variant) { return variant == 2 || variant == 3; }

bool flash_backward_variant_available(int variant) {
  if (variant == 3) return flash_wgmma_available();
  return variant >= 0 && variant < 3;
}

int flash_backward_default_variant() { return flash_backward_variant_available(3) ? 3 : 2; }

int flash_kernel_resources(int head_dim, int variant, FlashKernelResources (&out)[3], int forward_variant) {
  int n = 0;
  with_head_dim(head_dim, [&](auto hd) {
    constexpr int kD = decltype(hd)::value;
    out[n++] = forward_resources<kD>(forward_variant);
    n += backward_resources<kD>(variant, out + n);
  });
  return n;
}

bool flash_backward_sums_columns(int variant) { return variant == 3; }

void flash_attention_backward(bf16* dq, bf16* dk, bf16* dv, float* delta, const bf16* dy, const bf16* y,
                              const float* lse, const bf16* q, const bf16* k, const bf16* v, const FlashShape& shape,
                              cudaStream_t stream, int variant, bf16* ds_workspace, const FlashColumnSums& sums) {
  check_shape(shape);
  for (const void* p : {static_cast<const void*>(dq), static_cast<const void*>(dk), static_cast<const void*>(dv),
                        static_cast<const void*>(dy), static_cast<const void*>(y), static_cast<const void*>(q),
                        static_cast<const void*>(k), static_cast<const void*>(v), static_cast<const void*>(lse),
                        static_cast<const void*>(delta)})
    require(td::aligned16(p), "flash_attention_backward: every buffer must be 16-byte aligned");
  require(variant >= 0 && variant < kFlashBackwardVariants, "flash_attention_backward: variant out of range (0..3)");
  require(flash_backward_variant_available(variant),
          "flash_attention_backward: variant 3 (wgmma) needs an sm_90a build on a compute capability 9.0 GPU");
  require(!flash_backward_stores_ds(variant) || (ds_workspace != nullptr && td::aligned16(ds_workspace)),
          "flash_attention_backward: variants 2 and 3 need the dS workspace (flash_backward_ds_workspace_elems)");
  const bool any_sums = sums.dq || sums.dk || sums.dv;
  require(!any_sums || (flash_backward_sums_columns(variant) && sums.dq && sums.dk && sums.dv),
          "flash_attention_backward: column sums come from variant 3 only, and for dq, dk and dv together");
  NvtxRange range("flash_attention_backward");
  with_head_dim(shape.HD, [&](auto hd) {
    launch_backward<decltype(hd)::value>(dq, dk, dv, delta, dy, y, lse, q, k, v, shape, stream, variant, ds_workspace,
                                         sums);
  });
}

}  // namespace gpuaccept::train
