// The attention backward on Hopper's wgmma (backward variant 3; train/flash_attention_kernels.h):
// variant 2's two passes (flash_attention_backward.cu, whose delta kernel runs first), a dK/dV
// kernel that leaves its dS^T tiles in the workspace and a dQ kernel that sums dS K from them
// (below). The math, the grids and the workspace are variant 2's; the products and the order of
// the dK/dV steps (so of its sums) change. Templates on the head size kD (64 or 128). Variant
// 2's mma.sync kernel was bound by shared-memory reads (Nsight Compute on an H100: 83%
// L1/shared throughput, tensor pipe 34%) because every operand
// passes through ldmatrix; wgmma reads its shared-memory operands itself, and its accumulators
// stay in the registers the next product reads. 1.44 ms against 2.71 at the 7B shape on an
// H100 (docs/performance.md, "The attention on Hopper's wgmma"). Both kernels can also sum the
// columns of what they store by blocks of 64 positions (store_column_sums below;
// FlashColumnSums in train/flash_attention_kernels.h): ddp's qkv bias gradient.
//
// dK/dV:
//   per (b, kv head, block of 64 keys), one warpgroup, over the query blocks at or after its own
//   (the last first) and, for each, the G query heads of the group (step i):
//     S^T  (64 keys x 64 queries) = K Q^T           m64n64k16 x kD/16, K and Q from shared memory
//     dP^T (64 x 64)              = V dO^T          m64n64k16 x kD/16, V and dO from shared memory
//     P^T  = exp(S^T scale - lse[query]), 0 where query < key
//     dS^T = P^T o (dP^T - delta[query])            -> the dS workspace (bf16), for dQ
//     dV (64 keys x kD) += P^T dO                   m64nkDk16 x 4, P^T from registers, dO N-major
//     dK (64 x kD)      += dS^T Q                   m64nkDk16 x 4, dS^T from registers, Q N-major
//   dK scaled by 1/sqrt(kD) at the end.
// Thread (warp w, lane l): keys 16w + l/4 and +8, queries 8j + 2(l%4), +1 (wgmma.cuh's places).
// Shared memory (wgmma.cuh's swizzled tiles, 1024-byte aligned): K, V, then Q, dO, lse and
// delta twice (step i + 1 loads while step i computes), and the dS^T tile staged for whole-row
// stores; two CTAs a streaming multiprocessor for heads of 128, three for 64 (168 registers, 56
// bytes spilled: 223 against 241 us a layer of ddp's GPT-2 on an H200, 2026-11-28).
// sm_90a only: elsewhere the kernels trap and flash_wgmma_available() says no.
#include "train/kernels/flash_attention_tiles.cuh"
#include "train/kernels/wgmma.cuh"

namespace gpuaccept::train::flash {
namespace {

namespace wg = train::wgmma;
constexpr int kWgThreads = 128;  // one warpgroup
constexpr int kRowFloats = 2 * kBlock;  // lse and delta of one query block
constexpr int kStageBytes = kBlock * kBlock * 2;  // one dS^T tile (bf16), staged for coalesced stores
template <int kD>
constexpr int kDkdvWgmmaShared =
    6 * wg::kTileBytesOf<kD> + kStageBytes + 2 * kRowFloats * static_cast<int>(sizeof(float)) + wg::kSmemAlign;
static_assert(wg::kTileRows == kBlock);

// The column sums of a warpgroup's 64 x kD output tile as stored (flash_attention_kernels.h,
// FlashColumnSums): thread (warp w, lane l) holds rows 16w + l/4 and + 8 at columns 8j + 2(l%4)
// and + 1, whose two-row sums are pair_sums[2j], [2j + 1]. Summed over the 8 lanes of the same
// columns (a butterfly), then over the 4 warps in order through `scratch` (4 kD floats, free
// shared memory); out[c] for c < kD written by thread c. A fixed order: the same bits every run.
template <int kD>
__device__ inline void store_column_sums(float* out, float (&pair_sums)[kD / 4], float* scratch) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, t = lane % 4;
#pragma unroll
  for (int i = 0; i < kD / 4; ++i)
    for (int offset = 4; offset < 32; offset *= 2) pair_sums[i] += __shfl_xor_sync(0xffffffffu, pair_sums[i], offset);
  if (lane < 4) {
#pragma unroll
    for (int j = 0; j < kD / 8; ++j) {
      scratch[warp * kD + 8 * j + 2 * t] = pair_sums[2 * j];
      scratch[warp * kD + 8 * j + 2 * t + 1] = pair_sums[2 * j + 1];
    }
  }
  __syncthreads();
  if (threadIdx.x < kD) {
    float sum = 0.f;
    for (int w = 0; w < kWgThreads / 32; ++w) sum += scratch[w * kD + threadIdx.x];
    out[threadIdx.x] = sum;
  }
  __syncthreads();  // scratch free again
}

// Two rows' values of an output column pair, rounded to bf16 as stored, and their sums.
__device__ inline __nv_bfloat162 rounded(float x, float y) { return __floats2bfloat162_rn(x, y); }
__device__ inline void two_row_sums(float& sum_x, float& sum_y, __nv_bfloat162 a, __nv_bfloat162 b) {
  const float2 fa = __bfloat1622float2(a), fb = __bfloat1622float2(b);
  sum_x = fa.x + fb.x;
  sum_y = fa.y + fb.y;
}

// The thread's A fragments (k-steps of 16 queries) from its accumulators (wgmma.cuh).
__device__ inline void to_a_fragments(std::uint32_t (&a)[16], const float (&d)[32]) {
#pragma unroll
  for (int i = 0; i < 16; ++i) a[i] = pack(d[2 * i], d[2 * i + 1]);
}

// grid (B*NKV, T/64): blockIdx.x = b*NKV + kv head, blockIdx.y the key block.
template <int kD>
__global__ void __launch_bounds__(kWgThreads, kD == 64 ? 3 : 2) flash_backward_dkdv_wgmma_kernel(
    bf16* dk, bf16* dv, bf16* ds, const bf16* q, const bf16* k, const bf16* v, const bf16* dy, const float* lse,
    const float* delta, int T, int NH, int NKV, int qs, int ks, float scale, float scale_log2, float* dk_sums,
    float* dv_sums) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Ti = Tiles<kD>;
  constexpr int kTileBytes = wg::kTileBytesOf<kD>;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = wg::aligned_smem(smem_raw);
  unsigned char* sk = smem;
  unsigned char* sv = sk + kTileBytes;
  unsigned char* sqdo = sv + kTileBytes;                                    // [buffer][q, dO]
  unsigned char* stage = sqdo + 4 * kTileBytes;                            // dS^T, rows of 128 B
  float* srow = reinterpret_cast<float*>(stage + kStageBytes);                 // [buffer][lse, delta]
  const int G = NH / NKV;
  const int b = blockIdx.x / NKV, kvh = blockIdx.x % NKV;
  const int kb = blockIdx.y;
  const int ys = NH * kD;  // rows of dy
  const std::size_t qtile = static_cast<std::size_t>(kBlock) * qs, ktile = static_cast<std::size_t>(kBlock) * ks;
  const std::size_t ytile = static_cast<std::size_t>(kBlock) * ys;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, t = lane % 4;
  const int r0 = warp * 16 + lane / 4;  // this thread's keys r0 and r0 + 8, from the block's first
  const int blocks = T / kBlock, per_head = blocks - kb, steps = G * per_head;

  // Step i: query block blocks - 1 - i / G (the last first), query head kvh * G + i % G. The CTAs
  // that run at once then read the same Q and dO tiles at about the same time, from L2. On an
  // H100 (Nsight Compute): variant 2's order (heads outermost, query blocks up from the
  // diagonal) gave 58% L2 hits with DRAM at 48% of its bandwidth; query blocks up from the
  // diagonal with heads innermost 39% and 62-68% (the CTAs start at their own diagonals); this
  // order 73-75% and 34-35%, in about the same time (1.90 ms either way at full clock).
  auto step_head = [&](int i) { return kvh * G + i % G; };
  auto step_block = [&](int i) { return blocks - 1 - i / G; };
  auto load_step = [&](int i, int buf) {
    const int h = step_head(i), qb = step_block(i);
    unsigned char* dst = sqdo + buf * 2 * kTileBytes;
    wg::load_tile<kD>(dst, q + Ti::head_start(b, h, T, qs) + qb * qtile, qs);
    wg::load_tile<kD>(dst + kTileBytes, dy + Ti::head_start(b, h, T, ys) + qb * ytile, ys);
    const std::size_t rows = (static_cast<std::size_t>(b) * NH + h) * T + static_cast<std::size_t>(qb) * kBlock;
    load_row_values(srow + buf * kRowFloats, lse + rows);
    load_row_values(srow + buf * kRowFloats + kBlock, delta + rows);
    commit();
  };
  wg::load_tile<kD>(sk, k + Ti::head_start(b, kvh, T, ks) + kb * ktile, ks);
  wg::load_tile<kD>(sv, v + Ti::head_start(b, kvh, T, ks) + kb * ktile, ks);
  load_step(0, 0);  // one group with k and v

  float dk_acc[kD / 2], dv_acc[kD / 2];  // (64 keys, kD channels): keys r0, r0 + 8; channels 8j + 2t, +1
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) dk_acc[i] = dv_acc[i] = 0.f;
  for (int i = 0; i < steps; ++i) {
    const int buf = i % 2, qb = step_block(i);
    if (i + 1 < steps) {  // the other buffer is free since step i - 1's closing barrier
      load_step(i + 1, 1 - buf);
      wait<1>();
    } else {
      wait<0>();
    }
    wg::fence_async_shared();  // this thread's cp.async writes, to the proxy wgmma reads through
    __syncthreads();
    const unsigned char* sq = sqdo + buf * 2 * kTileBytes;
    const unsigned char* sdo = sq + kTileBytes;
    const float* sl = srow + buf * kRowFloats;
    const float* sd = sl + kBlock;

    float s[32], dp[32];  // S^T, dP^T: (64 keys, 64 queries)
#pragma unroll
    for (int j = 0; j < 32; ++j) s[j] = dp[j] = 0.f;
    wg::fence();
#pragma unroll
    for (int step = 0; step < kD / 16; ++step)
      wg::mma_m64n64k16_ss(s, wg::desc_k_major(sk, step), wg::desc_k_major(sq, step), step > 0);
    wg::commit();
#pragma unroll
    for (int step = 0; step < kD / 16; ++step)
      wg::mma_m64n64k16_ss(dp, wg::desc_k_major(sv, step), wg::desc_k_major(sdo, step), step > 0);
    wg::commit();
    wg::wait<1>();  // S^T is ready; dP^T may still run

    // P^T = exp(S^T scale - lse), in place; the diagonal block masks queries before the key.
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float2 l = *reinterpret_cast<const float2*>(sl + 8 * j + 2 * t);
      s[4 * j + 0] = exp2f(fmaf(s[4 * j + 0], scale_log2, -l.x * kLog2e));
      s[4 * j + 1] = exp2f(fmaf(s[4 * j + 1], scale_log2, -l.y * kLog2e));
      s[4 * j + 2] = exp2f(fmaf(s[4 * j + 2], scale_log2, -l.x * kLog2e));
      s[4 * j + 3] = exp2f(fmaf(s[4 * j + 3], scale_log2, -l.y * kLog2e));
    }
    if (qb == kb) {
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (8 * j + 2 * t + e % 2 < r0 + 8 * (e / 2)) s[4 * j + e] = 0.f;
    }
    wg::wait<0>();
    // dS^T = P^T (dP^T - delta), in place.
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float2 d = *reinterpret_cast<const float2*>(sd + 8 * j + 2 * t);
      dp[4 * j + 0] = s[4 * j + 0] * (dp[4 * j + 0] - d.x);
      dp[4 * j + 1] = s[4 * j + 1] * (dp[4 * j + 1] - d.y);
      dp[4 * j + 2] = s[4 * j + 2] * (dp[4 * j + 2] - d.x);
      dp[4 * j + 3] = s[4 * j + 3] * (dp[4 * j + 3] - d.y);
    }
    std::uint32_t pa[16], dsa[16];  // P^T, dS^T as A fragments (bf16 pairs)
    to_a_fragments(pa, s);
    to_a_fragments(dsa, dp);
    // dS^T into the staging tile before the products read dsa (nothing touches a wgmma's
    // registers while it runs): rows r0 and r0 + 8, 4 bytes at columns 8j + 2t, the 16-byte
    // chunk c of row r at c ^ (r % 8) so that a warp's 8 rows fall on distinct banks.
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int r1 = r0 + 8;
      *reinterpret_cast<std::uint32_t*>(stage + r0 * 128 + ((j ^ (r0 % 8)) * 16) + 4 * t) = dsa[2 * j];
      *reinterpret_cast<std::uint32_t*>(stage + r1 * 128 + ((j ^ (r1 % 8)) * 16) + 4 * t) = dsa[2 * j + 1];
    }
    // dV += P^T dO, dK += dS^T Q. (Starting dV's product before dS^T is computed, to overlap the
    // two, measured 1.51 against 1.45 ms on an H100: 255 registers and spills.)
    wg::fence();
#pragma unroll
    for (int kk = 0; kk < kBlock / 16; ++kk) {
      wg::mma_rs<kD>(dv_acc, pa + 4 * kk, wg::desc_n_major(sdo, kk));
      wg::mma_rs<kD>(dk_acc, dsa + 4 * kk, wg::desc_n_major(sq, kk));
    }
    wg::commit();
    __syncthreads();  // the staged tile is complete
    // ... to the workspace in whole 128-byte rows (16 bytes a thread, 4 times) while the
    // products run.
    bf16* dst = ds + ds_tile_offset(b * NH + step_head(i), blocks, qb, kb);
#pragma unroll
    for (int n = 0; n < kStageBytes / 16 / kWgThreads; ++n) {
      const int c = n * kWgThreads + threadIdx.x, row = c / 8, chunk = c % 8;
      *reinterpret_cast<uint4*>(dst + row * kBlock + chunk * 8) =
          *reinterpret_cast<const uint4*>(stage + row * 128 + ((chunk ^ (row % 8)) * 16));
    }
    wg::wait<0>();
    __syncthreads();  // every warp is done with this buffer and the staged tile before they are refilled
  }
  // dK (scaled), dV: keys kb*64 + r0 (+8), channels 8j + 2t.
  const std::size_t out = Ti::head_start(b, kvh, T, ks);
  const std::size_t row0 = static_cast<std::size_t>(kb) * kBlock + r0;
  float dk_pairs[kD / 4], dv_pairs[kD / 4];  // two-row sums of the stored values, for the column sums
#pragma unroll
  for (int j = 0; j < kD / 8; ++j) {
    const int col = 8 * j + 2 * t;
    const __nv_bfloat162 k0 = rounded(dk_acc[4 * j] * scale, dk_acc[4 * j + 1] * scale),
                         k8 = rounded(dk_acc[4 * j + 2] * scale, dk_acc[4 * j + 3] * scale),
                         v0 = rounded(dv_acc[4 * j], dv_acc[4 * j + 1]), v8 = rounded(dv_acc[4 * j + 2], dv_acc[4 * j + 3]);
    *reinterpret_cast<__nv_bfloat162*>(dk + out + row0 * ks + col) = k0;
    *reinterpret_cast<__nv_bfloat162*>(dk + out + (row0 + 8) * ks + col) = k8;
    *reinterpret_cast<__nv_bfloat162*>(dv + out + row0 * ks + col) = v0;
    *reinterpret_cast<__nv_bfloat162*>(dv + out + (row0 + 8) * ks + col) = v8;
    two_row_sums(dk_pairs[2 * j], dk_pairs[2 * j + 1], k0, k8);
    two_row_sums(dv_pairs[2 * j], dv_pairs[2 * j + 1], v0, v8);
  }
  if (dk_sums != nullptr) {  // the stage tile is free: the last step's closing barrier
    const std::size_t sums_row = (static_cast<std::size_t>(b) * blocks + kb) * ks + static_cast<std::size_t>(kvh) * kD;
    auto* scratch = reinterpret_cast<float*>(stage);
    store_column_sums<kD>(dk_sums + sums_row, dk_pairs, scratch);
    store_column_sums<kD>(dv_sums + sums_row, dv_pairs, scratch);
  }
#else
  (void)dk, (void)dv, (void)ds, (void)q, (void)k, (void)v, (void)dy, (void)lse, (void)delta;
  (void)T, (void)NH, (void)NKV, (void)qs, (void)ks, (void)scale, (void)scale_log2, (void)dk_sums, (void)dv_sums;
  __trap();  // not built for sm_90a: flash_wgmma_available() keeps the host from launching it
#endif
}

// ---- dQ from dS ---------------------------------------------------------------------------
// dQ = scale sum_j dS_j K_j over the key blocks j <= own, from the dS^T tiles above: variant 2's
// dQ-from-dS kernel on wgmma, summed in key-block order inside one CTA (the same bits every
// run). One warpgroup per (b, h, block of 64 queries), the longest first; per key block
//   dQ (64 queries x 128) += dS (64 x 64 keys) K (64 keys x 128)    m64n128k16, 4 k-steps:
// A is the staged dS^T tile read M-major (its rows, the keys, are the reduction), B the K tile
// read N-major. Shared memory: K and dS^T tiles twice (in use, next).
template <int kD>
constexpr int kDqWgmmaShared = 2 * (wg::kTileBytesOf<kD> + kStageBytes) + wg::kSmemAlign;

// A 64 x 64 dS^T tile of the workspace (rows of 128 bytes) into shared memory, swizzled as one
// half of wgmma.cuh's tile: 16-byte chunk c of row r at c ^ (r % 8). Thread x copies chunk x % 8
// of rows x / 8 + 16 n (as wgmma::load_tile: a fixed swizzle term, no divisions a pass).
__device__ inline void load_ds_tile_swizzled(unsigned char* dst, const bf16* src) {
  constexpr int kRowsPerPass = kWgThreads / 8;
  const int c = static_cast<int>(threadIdx.x) % 8, r = static_cast<int>(threadIdx.x) / 8;
  unsigned char* d = dst + r * 128 + ((c ^ (r % 8)) * 16);
  const bf16* s = src + r * kBlock + c * 8;
#pragma unroll
  for (int n = 0; n < kBlock / kRowsPerPass; ++n)
    copy_async16(d + n * kRowsPerPass * 128, s + n * kRowsPerPass * kBlock);
}

template <int kD>
__global__ void __launch_bounds__(kWgThreads) flash_backward_dq_from_ds_wgmma_kernel(bf16* dq, const bf16* ds,
                                                                                   const bf16* k, int T, int NH,
                                                                                   int NKV, int qs, int ks,
                                                                                   float scale, float* dq_sums) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kTileBytes = wg::kTileBytesOf<kD>;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = wg::aligned_smem(smem_raw);
  unsigned char* sk = smem;                          // [buffer] K tile
  unsigned char* sds = smem + 2 * kTileBytes;    // [buffer] dS^T tile
  const DsQueryBlock at = ds_query_block<kD>(ds, k, T, NH, NKV, ks);
  const int b = at.b, h = at.h, qb = at.qb;
  const std::size_t ktile = at.ktile;
  const bf16 *kh = at.kh, *dsq = at.dsq;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, t = lane % 4;
  const int r0 = warp * 16 + lane / 4;

  wg::load_tile<kD>(sk, kh, ks);
  load_ds_tile_swizzled(sds, dsq);
  commit();
  float dq_acc[kD / 2];  // (64 queries, kD channels): queries r0, r0 + 8; channels 8j + 2t, +1
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) dq_acc[i] = 0.f;
  for (int kb = 0; kb <= qb; ++kb) {
    if (kb < qb) {  // the other buffer is free since the last block's closing barrier
      const int next = (kb + 1) % 2;
      wg::load_tile<kD>(sk + next * kTileBytes, kh + (kb + 1) * ktile, ks);
      load_ds_tile_swizzled(sds + next * kStageBytes, dsq + static_cast<std::size_t>(kb + 1) * kBlock * kBlock);
      commit();
      wait<1>();
    } else {
      wait<0>();
    }
    wg::fence_async_shared();
    __syncthreads();
    const int cur = kb % 2;
    wg::fence();
#pragma unroll
    for (int kk = 0; kk < kBlock / 16; ++kk)
      wg::mma_ss<kD, 1, 1>(dq_acc, wg::desc_n_major(sds + cur * kStageBytes, kk),
                           wg::desc_n_major(sk + cur * kTileBytes, kk));
    wg::commit();
    wg::wait<0>();
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  bf16* out = dq + Tiles<kD>::head_start(b, h, T, qs);
  const std::size_t row0 = static_cast<std::size_t>(qb) * kBlock + r0;
  float dq_pairs[kD / 4];  // two-row sums of the stored values, for the column sums
#pragma unroll
  for (int j = 0; j < kD / 8; ++j) {
    const int col = 8 * j + 2 * t;
    const __nv_bfloat162 q0 = rounded(dq_acc[4 * j] * scale, dq_acc[4 * j + 1] * scale),
                         q8 = rounded(dq_acc[4 * j + 2] * scale, dq_acc[4 * j + 3] * scale);
    *reinterpret_cast<__nv_bfloat162*>(out + row0 * qs + col) = q0;
    *reinterpret_cast<__nv_bfloat162*>(out + (row0 + 8) * qs + col) = q8;
    two_row_sums(dq_pairs[2 * j], dq_pairs[2 * j + 1], q0, q8);
  }
  if (dq_sums != nullptr) {  // the dS^T tiles are free: the last block's closing barrier
    const std::size_t sums_row =
        (static_cast<std::size_t>(b) * (T / kBlock) + qb) * qs + static_cast<std::size_t>(h) * kD;
    store_column_sums<kD>(dq_sums + sums_row, dq_pairs, reinterpret_cast<float*>(sds));
  }
#else
  (void)dq, (void)ds, (void)k, (void)T, (void)NH, (void)NKV, (void)qs, (void)ks, (void)scale, (void)dq_sums;
  __trap();  // not built for sm_90a: flash_wgmma_available() keeps the host from launching it
#endif
}

}  // namespace

bool flash_wgmma_available() {
#if defined(GPUACCEPT_FLASH_WGMMA)
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) return false;
  return major == 9 && minor == 0;  // sm_90a code runs on compute capability 9.0 only
#else
  return false;
#endif
}

template <int kD>
int flash_backward_wgmma_resources(FlashKernelResources* out) {
  out[0] = resources("dkdv_wgmma", flash_backward_dkdv_wgmma_kernel<kD>, kWgThreads, kDkdvWgmmaShared<kD>);
  out[1] = resources("dq_from_ds_wgmma", flash_backward_dq_from_ds_wgmma_kernel<kD>, kWgThreads, kDqWgmmaShared<kD>);
  return 2;
}

template <int kD>
void launch_flash_backward_wgmma(bf16* dq, bf16* dk, bf16* dv, bf16* ds, const bf16* q, const bf16* k, const bf16* v,
                                 const bf16* dy, const float* lse, const float* delta, const FlashShape& s, float scale,
                                 const FlashColumnSums& sums, cudaStream_t stream) {
  require(flash_wgmma_available(), "flash attention: backward variant 3 needs an sm_90a build on an H100/H200");
  static const bool allowed = (allow_shared(flash_backward_dkdv_wgmma_kernel<kD>, kDkdvWgmmaShared<kD>),
                               allow_shared(flash_backward_dq_from_ds_wgmma_kernel<kD>, kDqWgmmaShared<kD>), true);
  (void)allowed;
  const int qs = static_cast<int>(s.q_row), ks = static_cast<int>(s.kv_row);
  flash_backward_dkdv_wgmma_kernel<kD><<<dim3(s.B * s.NKV, s.T / kBlock), kWgThreads, kDkdvWgmmaShared<kD>, stream>>>(
      dk, dv, ds, q, k, v, dy, lse, delta, s.T, s.NH, s.NKV, qs, ks, scale, scale * kLog2e, sums.dk, sums.dv);
  check_launch("flash_attention_backward (dk, dv on wgmma)");
  const dim3 dq_grid(s.B * s.NH, s.T / kBlock);
  flash_backward_dq_from_ds_wgmma_kernel<kD><<<dq_grid, kWgThreads, kDqWgmmaShared<kD>, stream>>>(
      dq, ds, k, s.T, s.NH, s.NKV, qs, ks, scale, sums.dq);
  check_launch("flash_attention_backward (dq from ds on wgmma)");
}

template int flash_backward_wgmma_resources<64>(FlashKernelResources*);
template int flash_backward_wgmma_resources<128>(FlashKernelResources*);
template void launch_flash_backward_wgmma<64>(bf16*, bf16*, bf16*, bf16*, const bf16*, const bf16*, const bf16*,
                                              const bf16*, const float*, const float*, const FlashShape&, float,
                                              const FlashColumnSums&, cudaStream_t);
template void launch_flash_backward_wgmma<128>(bf16*, bf16*, bf16*, bf16*, const bf16*, const bf16*, const bf16*,
                                               const bf16*, const float*, const float*, const FlashShape&, float,
                                               const FlashColumnSums&, cudaStream_t);

}  // namespace gpuaccept::train::flash
