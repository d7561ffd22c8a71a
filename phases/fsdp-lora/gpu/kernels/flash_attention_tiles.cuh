// The pieces the flash attention kernels share (private to flash_attention_{forward,backward}.cu
// and their wgmma variants, flash_attention_{forward,backward}_wgmma.cu; kernels.h gives the
// interface): the tile shape, loads into shared memory, the warp-level tensor-core products on
// ldmatrix fragments, the causal mask, the forward's online softmax, the dS workspace's layout,
// and the host-side checks. (The wgmma kernels' own tiles and products: src/train/kernels/
// wgmma.cuh.)
//
// The matrix products are tensor-core mma.sync m16n8k16 (bf16 in, fp32 accumulate) on
// fragments loaded from shared memory with ldmatrix. Softmax runs in registers on the
// accumulator fragments: an m16n8 accumulator holds, in thread (g = lane/4, t = lane%4), rows
// g and g+8, columns 2t and 2t+1 -- the places a 16x16 A operand wants them, so P goes from
// one product into the next without leaving registers.
#pragma once

#include "cuda/nvtx_range.h"
#include "fsdp-lora/gpu/kernels/common.cuh"
#include "train/kernels/online_softmax.cuh"
#include "train/kernels/tensor_core.cuh"

namespace gpuaccept::fsdp::gpu::flash {

namespace td = detail::td;
using detail::check_launch;
using detail::require;

constexpr int kD = kFlashHeadDim;  // 128: head size
constexpr int kBlock = kFlashBlock;  // 64: queries (keys) per block
constexpr int kStride = kD + 8;    // shared-memory row stride in bf16: 272 B keeps ldmatrix rows on distinct banks
constexpr int kTile = kBlock * kStride;  // bf16 elements of one 64 x 128 shared-memory tile
constexpr int kPStride = kBlock + 8;     // P^T and dS^T tiles (64 x 64) in the dK/dV kernel
constexpr int kWarpThreads = 32;
constexpr int kThreads = 4 * kWarpThreads;      // forward and dQ: 4 warps x 16 rows
constexpr int kDkdvThreads = 8 * kWarpThreads;  // dK/dV: 4 key groups x 2 halves
constexpr float kLog2e = 1.4426950408889634f;

// ---- tensor-core and copy primitives: src/train/kernels/tensor_core.cuh
using train::tc::commit;
using train::tc::copy_async16;
using train::tc::ldmatrix_x4;
using train::tc::ldmatrix_x4_trans;
using train::tc::mma;
using train::tc::pack;
using train::tc::wait;

// A 64 x 128 tile (64 consecutive positions, rows `ld` elements apart) into shared memory by
// the kBlockThreads threads of the block: thread x copies chunk x % 16 of rows x / 16 + n
// kBlockThreads / 16, a fixed count, so the loop unrolls with no division a pass (the loop over
// blockDim.x it replaces kept the ALU busy: wgmma.cuh's load_tile, 2026-11-26).
template <int kBlockThreads = kThreads>
__device__ inline void load_tile(bf16* dst, const bf16* src, int ld) {
  static_assert(kBlock * kD / 8 % kBlockThreads == 0);
  constexpr int kRowsPerPass = kBlockThreads / (kD / 8);
  const int col = (static_cast<int>(threadIdx.x) % (kD / 8)) * 8, row = static_cast<int>(threadIdx.x) / (kD / 8);
  bf16* d = dst + row * kStride + col;
  const bf16* s = src + static_cast<std::size_t>(row) * ld + col;
#pragma unroll
  for (int n = 0; n < kBlock / kRowsPerPass; ++n)
    copy_async16(d + n * kRowsPerPass * kStride, s + static_cast<std::size_t>(n) * kRowsPerPass * ld);
}
// 64 floats (one per row of a block).
__device__ inline void load_row_values(float* dst, const float* src) {
  if (threadIdx.x < kBlock / 4) copy_async16(dst + threadIdx.x * 4, src + threadIdx.x * 4);
}

template <typename Kernel>
inline void allow_shared(Kernel kernel, int bytes) {
  if (bytes > 48 * 1024) {
    const cudaError_t rc = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    require(rc == cudaSuccess, "flash attention: the device cannot give the kernels their shared memory");
  }
}

// ---- warp-level products (16 rows per warp) ------------------------------------------------

// The A operand of 16 rows x 128 (8 k-steps) of a tile, `a` at the first of the 16 rows.
using Operand = uint32_t[kD / 16][4];
__device__ inline void load_a(Operand& a, const bf16* rows, int lane) {
#pragma unroll
  for (int ks = 0; ks < kD / 16; ++ks) ldmatrix_x4(a[ks], rows + (lane % 16) * kStride + ks * 16 + (lane / 16) * 8);
}

// acc (16 x 8NF) += a (16 x 128) * B^T, B the NF*8 rows of a tile from `b` on (over 128 columns).
template <int NF>
__device__ inline void mma_abt(float (&acc)[NF][4], const Operand& a, const bf16* b, int lane) {
#pragma unroll
  for (int n2 = 0; n2 < NF / 2; ++n2)
#pragma unroll
    for (int ks = 0; ks < kD / 16; ++ks) {
      uint32_t f[4];
      ldmatrix_x4(f, b + (n2 * 16 + (lane / 16) * 8 + lane % 8) * kStride + ks * 16 + ((lane / 8) % 2) * 8);
      mma(acc[2 * n2], a[ks], f[0], f[1]);
      mma(acc[2 * n2 + 1], a[ks], f[2], f[3]);
    }
}
// The same with the A rows read from shared memory one k-step at a time (fewer registers).
template <int NF>
__device__ inline void mma_abt_smem(float (&acc)[NF][4], const bf16* a_rows, const bf16* b, int lane) {
#pragma unroll
  for (int ks = 0; ks < kD / 16; ++ks) {
    uint32_t a[4];
    ldmatrix_x4(a, a_rows + (lane % 16) * kStride + ks * 16 + (lane / 16) * 8);
#pragma unroll
    for (int n2 = 0; n2 < NF / 2; ++n2) {
      uint32_t f[4];
      ldmatrix_x4(f, b + (n2 * 16 + (lane / 16) * 8 + lane % 8) * kStride + ks * 16 + ((lane / 8) % 2) * 8);
      mma(acc[2 * n2], a, f[0], f[1]);
      mma(acc[2 * n2 + 1], a, f[2], f[3]);
    }
  }
}

// acc (16 x 8ND) += a (one 16 x 16 A fragment: k-step kk) * B's rows 16 kk .. 16 kk + 15 of a
// tile (rows are the inner dimension) from `b` on, its 8ND columns from b's on: the B side that
// mma_pb, mma_sb and the backward's mma_tsb share, whichever way their A fragment is made.
template <int ND>
__device__ inline void mma_b_rows(float (&acc)[ND][4], const uint32_t (&a)[4], const bf16* b, int kk, int lane) {
#pragma unroll
  for (int d2 = 0; d2 < ND / 2; ++d2) {
    uint32_t f[4];
    ldmatrix_x4_trans(f, b + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * kStride + d2 * 16 + (lane / 16) * 8);
    mma(acc[2 * d2], a, f[0], f[1]);
    mma(acc[2 * d2 + 1], a, f[2], f[3]);
  }
}

// acc (16 x 8ND) += p (16 x 8NK, accumulators turned A operands) * B, B the NK*8 rows of a
// tile (rows are the inner dimension) from `b` on, its columns from b's on.
template <int NK, int ND>
__device__ inline void mma_pb(float (&acc)[ND][4], const float (&p)[NK][4], const bf16* b, int lane) {
#pragma unroll
  for (int kk = 0; kk < NK / 2; ++kk) {
    uint32_t a[4];
    a[0] = pack(p[2 * kk][0], p[2 * kk][1]);
    a[1] = pack(p[2 * kk][2], p[2 * kk][3]);
    a[2] = pack(p[2 * kk + 1][0], p[2 * kk + 1][1]);
    a[3] = pack(p[2 * kk + 1][2], p[2 * kk + 1][3]);
    mma_b_rows(acc, a, b, kk, lane);
  }
}
// acc (16 x 8ND) += A (16 x 64 bf16 in shared memory, rows kPStride apart, `a_rows` at the
// first) * B (64 rows of a tile from `b` on).
template <int ND>
__device__ inline void mma_sb(float (&acc)[ND][4], const bf16* a_rows, const bf16* b, int lane) {
#pragma unroll
  for (int kk = 0; kk < kBlock / 16; ++kk) {
    uint32_t a[4];
    ldmatrix_x4(a, a_rows + (lane % 16) * kPStride + kk * 16 + (lane / 16) * 8);
    mma_b_rows(acc, a, b, kk, lane);
  }
}

template <int NF>
__device__ inline void zero(float (&acc)[NF][4]) {
#pragma unroll
  for (auto& f : acc)
#pragma unroll
    for (float& x : f) x = 0.f;
}

// Rows g and g+8 (row0, row0 + 8 of the destination) of a warp's 16 x 8NF accumulator,
// scaled, to rows `ld` elements apart, columns from `dst` on.
template <int NF>
__device__ inline void store_rows(bf16* dst, int ld, const float (&acc)[NF][4], int row0, float s0, float s1, int t) {
  bf16* r0 = dst + static_cast<std::size_t>(row0) * ld;
  bf16* r1 = dst + static_cast<std::size_t>(row0 + 8) * ld;
#pragma unroll
  for (int n = 0; n < NF; ++n) {
    const int col = n * 8 + 2 * t;
    *reinterpret_cast<__nv_bfloat162*>(r0 + col) = __floats2bfloat162_rn(acc[n][0] * s0, acc[n][1] * s0);
    *reinterpret_cast<__nv_bfloat162*>(r1 + col) = __floats2bfloat162_rn(acc[n][2] * s1, acc[n][3] * s1);
  }
}

// Causal mask of a diagonal block for a thread's rows r0 and r0 + 8 and its columns col0 +
// (8n + 2t + j) (both counted from the block's first position). kAfterRow: columns after the
// row get `value` (queries x keys); else columns before it (keys x queries).
template <bool kAfterRow, int NF>
__device__ inline void mask_diagonal(float (&s)[NF][4], int r0, int col0, int t, float value) {
#pragma unroll
  for (int n = 0; n < NF; ++n)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int col = col0 + n * 8 + 2 * t + j;
      if (kAfterRow ? col > r0 : col < r0) s[n][j] = value;
      if (kAfterRow ? col > r0 + 8 : col < r0 + 8) s[n][2 + j] = value;
    }
}

// Where a head's rows start in a token-major tensor of `heads` heads: (b, T, heads, 128).
__device__ inline std::size_t head_start(int b, int h, int T, int heads) {
  return (static_cast<std::size_t>(b) * T * heads + h) * kD;
}

// The dS workspace (backward variants 2 and 3) of dS^T tiles (bf16, 64 keys x 64 queries,
// row-major): per (b, query head), the causal tiles (query block i, key block j <= i) at
// i (i + 1) / 2 + j, so that a query block's tiles j = 0..i lie one after another.
__device__ inline std::size_t ds_tile_offset(int bh, int blocks, int qb, int kb) {
  const std::size_t tiles_per_head = static_cast<std::size_t>(blocks) * (blocks + 1) / 2;
  return (static_cast<std::size_t>(bh) * tiles_per_head + static_cast<std::size_t>(qb) * (qb + 1) / 2 + kb) *
         (kBlock * kBlock);
}

// The query block of a dQ-from-dS CTA (backward variants 2 and 3): grid (B*NH, blocks),
// blockIdx.x = b*NH + h, blockIdx.y the query block from the end (the longest first); its key/value
// head's K rows and its own dS^T tiles (key blocks 0..qb, one after another).
struct DsQueryBlock {
  int b, h, qb;
  int ks;                // row stride of k (NKV heads), elements
  std::size_t ktile;     // elements between 64-row tiles of k
  const bf16 *kh, *dsq;  // the kv head's first K row; the block's first dS^T tile
};
__device__ inline DsQueryBlock ds_query_block(const bf16* ds, const bf16* k, int T, int NH, int NKV) {
  DsQueryBlock a;
  a.b = blockIdx.x / NH;
  a.h = blockIdx.x % NH;
  a.qb = gridDim.y - 1 - blockIdx.y;
  a.ks = NKV * kD;
  a.ktile = static_cast<std::size_t>(kBlock) * a.ks;
  a.kh = k + head_start(a.b, a.h / (NH / NKV), T, NKV);
  a.dsq = ds + ds_tile_offset(blockIdx.x, T / kBlock, a.qb, 0);
  return a;
}

// Key/value blocks double-buffered in `skv` ([buffer][k, v]): block kb is in buffer kb % 2, and
// while it is used block kb + 1 (up to `last`) loads into the other one. Returns block kb's
// tiles (k, then v) once every thread can read them.
__device__ inline const bf16* next_kv_block(bf16* skv, const bf16* kh, const bf16* vh, int kb, int last,
                                            std::size_t ktile, int ks) {
  if (kb < last) {  // the other buffer is free since the last block's closing barrier
    bf16* next = skv + ((kb + 1) % 2) * 2 * kTile;
    load_tile(next, kh + (kb + 1) * ktile, ks);
    load_tile(next + kTile, vh + (kb + 1) * ktile, ks);
    commit();
    wait<1>();
  } else {
    wait<0>();
  }
  __syncthreads();
  return skv + (kb % 2) * 2 * kTile;
}

// ---- the forward's rows (flash_attention_forward.cu and its wgmma variant) ------------------

// online_softmax: src/train/kernels/online_softmax.cuh (shared with ddp).
using train::tc::online_softmax;

// The head and query block of a forward CTA: grid (B*NH, blocks), blockIdx.x = b*NH + h and
// blockIdx.y the query block counted from the end (the longest rows start first, for a short
// tail); its q rows and its key/value head's k and v (query head h reads kv head h / G).
struct QueryBlock {
  int b, h, qb;
  int qs, ks;  // row strides of q (NH heads) and of k, v (NKV heads), elements
  const bf16 *qh, *kh, *vh;
  std::size_t qtile, ktile;  // elements between 64-row tiles of q and of k, v
};
__device__ inline QueryBlock query_block(const bf16* q, const bf16* k, const bf16* v, int T, int NH, int NKV) {
  QueryBlock a;
  a.b = blockIdx.x / NH;
  a.h = blockIdx.x % NH;
  const int kvh = a.h / (NH / NKV);
  a.qb = gridDim.y - 1 - blockIdx.y;
  a.qs = NH * kD;
  a.ks = NKV * kD;
  a.qh = q + head_start(a.b, a.h, T, NH);
  a.kh = k + head_start(a.b, kvh, T, NKV);
  a.vh = v + head_start(a.b, kvh, T, NKV);
  a.qtile = static_cast<std::size_t>(kBlock) * a.qs;
  a.ktile = static_cast<std::size_t>(kBlock) * a.ks;
  return a;
}

// A 16-row tile's end: the quad's shares of the row sums added, o / l rounded to y (rows row0
// and row0 + 8 of the head's rows, `ld` apart) and lse = m + log l in natural units of the
// scaled scores: ln(sum e^z) = (m + log2 l) / log2 e.
__device__ inline void finish_rows(bf16* y_head, int ld, float* lse_head, const float (&acc)[16][4], int row0, float m0,
                                   float m1, float l0, float l1, int t) {
  float sum[2] = {l0, l1};
  for (float& x : sum) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    x += __shfl_xor_sync(0xffffffffu, x, 2);
  }
  store_rows(y_head, ld, acc, row0, 1.f / sum[0], 1.f / sum[1], t);
  if (t == 0) {
    lse_head[row0] = (m0 + log2f(sum[0])) / kLog2e;
    lse_head[row0 + 8] = (m1 + log2f(sum[1])) / kLog2e;
  }
}

// ---- host side ---------------------------------------------------------------------------

inline void check_shape(const char* what, int B, int T, int NH, int NKV) {
  (void)what;
  require(B > 0 && NH > 0 && NKV > 0 && NH % NKV == 0, "flash attention: B, NH, NKV positive, NH a multiple of NKV");
  require(T > 0 && T % kBlock == 0, "flash attention: T must be a positive multiple of 64");
  require(static_cast<long long>(B) * NH <= 0x7fffffffLL && T / kBlock <= 65535, "flash attention: grid too large");
}


// The compiled kernel as the device sees it (cudaFuncGetAttributes, occupancy).
template <typename Kernel>
inline FlashKernelResources resources(const char* name, Kernel kernel, int threads, int shared) {
  FlashKernelResources r{};
  r.name = name;
  r.threads = threads;
  r.dynamic_smem = shared;
  allow_shared(kernel, shared);
  cudaFuncAttributes a{};
  if (cudaFuncGetAttributes(&a, kernel) == cudaSuccess) {
    r.regs = a.numRegs;
    r.static_smem = static_cast<int>(a.sharedSizeBytes);
    r.local_bytes = static_cast<int>(a.localSizeBytes);
    r.max_dynamic_smem = a.maxDynamicSharedSizeBytes;
  }
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, shared) == cudaSuccess)
    r.blocks_per_sm = blocks;
  return r;
}

// The forward variant's kernel (flash_attention_forward.cu), for flash_kernel_resources.
FlashKernelResources forward_resources(int forward_variant);

// The kernels on Hopper's wgmma (built for sm_90a): whether this build and device can run them
// (flash_attention_backward_wgmma.cu), forward variant 2 (flash_attention_forward_wgmma.cu),
// backward variant 3's two kernels (flash_attention_backward_wgmma.cu: resources, 2 into out,
// and their launch after the delta kernel, with variant 2's arguments and dS workspace).
bool flash_wgmma_available();
FlashKernelResources flash_forward_wgmma_resources();
void launch_flash_forward_wgmma(bf16* y, float* lse, const bf16* q, const bf16* k, const bf16* v, int B, int T, int NH,
                                int NKV, float scale_log2, cudaStream_t stream);
int flash_backward_wgmma_resources(FlashKernelResources* out);
void launch_flash_backward_wgmma(bf16* dq, bf16* dk, bf16* dv, bf16* ds, const bf16* q, const bf16* k, const bf16* v,
                                 const bf16* dy, const float* lse, const float* delta, int B, int T, int NH, int NKV,
                                 float scale, cudaStream_t stream);

}  // namespace gpuaccept::fsdp::gpu::flash
