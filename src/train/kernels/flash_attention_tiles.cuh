// The pieces the flash attention kernels share (private to flash_attention_{forward,backward}.cu
// and their wgmma variants, flash_attention_{forward,backward}_wgmma.cu;
// train/flash_attention_kernels.h gives the interface): the tile shape, loads into shared
// memory, the warp-level tensor-core products on ldmatrix fragments, the causal mask, the
// forward's online softmax, the dS workspace's layout, and the host-side checks. (The wgmma
// kernels' own tiles and products: wgmma.cuh.)
//
// Everything that depends on the head size kD (64 or 128) lives in Tiles<kD>: a tile is 64
// positions x kD channels, and the products loop over kD / 16 k-steps or kD / 8 output
// fragments. The kernels are templates on kD, instantiated for both sizes.
//
// The matrix products are tensor-core mma.sync m16n8k16 (bf16 in, fp32 accumulate) on
// fragments loaded from shared memory with ldmatrix. Softmax runs in registers on the
// accumulator fragments: an m16n8 accumulator holds, in thread (g = lane/4, t = lane%4), rows
// g and g+8, columns 2t and 2t+1 -- the places a 16x16 A operand wants them, so P goes from
// one product into the next without leaving registers.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cuda/nvtx_range.h"
#include "train/flash_attention_kernels.h"
#include "train/kernels/common.cuh"
#include "train/kernels/online_softmax.cuh"
#include "train/kernels/tensor_core.cuh"

namespace gpuaccept::train::flash {

namespace td = detail;
using detail::check_launch;
using detail::require;

constexpr int kBlock = kFlashBlock;    // 64: queries (keys) per block
constexpr int kPStride = kBlock + 8;   // P^T and dS^T tiles (64 x 64) in the dK/dV kernel
constexpr int kWarpThreads = 32;
constexpr int kThreads = 4 * kWarpThreads;      // forward and dQ: 4 warps x 16 rows
constexpr int kDkdvThreads = 8 * kWarpThreads;  // dK/dV: 4 key groups x 2 halves
constexpr float kLog2e = 1.4426950408889634f;

// ---- tensor-core and copy primitives: tensor_core.cuh; the online softmax: online_softmax.cuh
using tc::commit;
using tc::copy_async16;
using tc::ldmatrix_x4;
using tc::ldmatrix_x4_trans;
using tc::mma;
using tc::online_softmax;
using tc::pack;
using tc::wait;

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

// The dS workspace (backward variants 2 and 3) of dS^T tiles (bf16, 64 keys x 64 queries,
// row-major): per (b, query head), the causal tiles (query block i, key block j <= i) at
// i (i + 1) / 2 + j, so that a query block's tiles j = 0..i lie one after another.
__device__ inline std::size_t ds_tile_offset(int bh, int blocks, int qb, int kb) {
  const std::size_t tiles_per_head = static_cast<std::size_t>(blocks) * (blocks + 1) / 2;
  return (static_cast<std::size_t>(bh) * tiles_per_head + static_cast<std::size_t>(qb) * (qb + 1) / 2 + kb) *
         (kBlock * kBlock);
}

// ---- what depends on the head size ----------------------------------------------------------
template <int kD>
struct Tiles {
  static_assert(kD == 64 || kD == 128, "the kernels are built for heads of 64 and 128");
  static constexpr int kStride = kD + 8;  // shared-memory row stride in bf16: rows on distinct banks for ldmatrix
  static constexpr int kTile = kBlock * kStride;  // bf16 elements of one 64 x kD shared-memory tile
  static constexpr int kSteps = kD / 16;          // k-steps of a product over the head's channels
  static constexpr int kFrags = kD / 8;           // m16n8 fragments across the head's channels

  // Where head h of sequence b starts in a token-major tensor whose rows are `row` elements apart.
  __device__ static std::size_t head_start(int b, int h, int T, int row) {
    return static_cast<std::size_t>(b) * T * row + static_cast<std::size_t>(h) * kD;
  }

  // A 64 x kD tile (64 consecutive positions, rows `ld` elements apart) into shared memory by
  // the kBlockThreads threads of the block: thread x copies chunk x % (kD/8) of rows
  // x / (kD/8) + n kBlockThreads / (kD/8), a fixed count, so the loop unrolls with no division
  // a pass.
  template <int kBlockThreads = kThreads>
  __device__ static void load_tile(bf16* dst, const bf16* src, int ld) {
    static_assert(kBlock * kD / 8 % kBlockThreads == 0);
    constexpr int kChunks = kD / 8, kRowsPerPass = kBlockThreads / kChunks;
    const int col = (static_cast<int>(threadIdx.x) % kChunks) * 8, row = static_cast<int>(threadIdx.x) / kChunks;
    bf16* d = dst + row * kStride + col;
    const bf16* s = src + static_cast<std::size_t>(row) * ld + col;
#pragma unroll
    for (int n = 0; n < kBlock / kRowsPerPass; ++n)
      copy_async16(d + n * kRowsPerPass * kStride, s + static_cast<std::size_t>(n) * kRowsPerPass * ld);
  }

  // The A operand of 16 rows x kD (kSteps k-steps) of a tile, `rows` at the first of the 16.
  using Operand = uint32_t[kSteps][4];
  __device__ static void load_a(Operand& a, const bf16* rows, int lane) {
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) ldmatrix_x4(a[ks], rows + (lane % 16) * kStride + ks * 16 + (lane / 16) * 8);
  }

  // acc (16 x 8NF) += a (16 x kD) * B^T, B the NF*8 rows of a tile from `b` on (over kD columns).
  template <int NF>
  __device__ static void mma_abt(float (&acc)[NF][4], const Operand& a, const bf16* b, int lane) {
#pragma unroll
    for (int n2 = 0; n2 < NF / 2; ++n2)
#pragma unroll
      for (int ks = 0; ks < kSteps; ++ks) {
        uint32_t f[4];
        ldmatrix_x4(f, b + (n2 * 16 + (lane / 16) * 8 + lane % 8) * kStride + ks * 16 + ((lane / 8) % 2) * 8);
        mma(acc[2 * n2], a[ks], f[0], f[1]);
        mma(acc[2 * n2 + 1], a[ks], f[2], f[3]);
      }
  }
  // The same with the A rows read from shared memory one k-step at a time (fewer registers).
  template <int NF>
  __device__ static void mma_abt_smem(float (&acc)[NF][4], const bf16* a_rows, const bf16* b, int lane) {
#pragma unroll
    for (int ks = 0; ks < kSteps; ++ks) {
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
  // tile (rows are the inner dimension) from `b` on, its 8ND columns from b's on: the B side
  // that mma_pb, mma_sb and the backward's mma_tsb share, whichever way their A fragment is made.
  template <int ND>
  __device__ static void mma_b_rows(float (&acc)[ND][4], const uint32_t (&a)[4], const bf16* b, int kk, int lane) {
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
  __device__ static void mma_pb(float (&acc)[ND][4], const float (&p)[NK][4], const bf16* b, int lane) {
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
  __device__ static void mma_sb(float (&acc)[ND][4], const bf16* a_rows, const bf16* b, int lane) {
#pragma unroll
    for (int kk = 0; kk < kBlock / 16; ++kk) {
      uint32_t a[4];
      ldmatrix_x4(a, a_rows + (lane % 16) * kPStride + kk * 16 + (lane / 16) * 8);
      mma_b_rows(acc, a, b, kk, lane);
    }
  }

  // Key/value blocks double-buffered in `skv` ([buffer][k, v]): block kb is in buffer kb % 2,
  // and while it is used block kb + 1 (up to `last`) loads into the other one. Returns block
  // kb's tiles (k, then v) once every thread can read them.
  __device__ static const bf16* next_kv_block(bf16* skv, const bf16* kh, const bf16* vh, int kb, int last,
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
};

// ---- the forward's rows (flash_attention_forward.cu and its wgmma variant) ------------------

// The head and query block of a forward CTA: grid (B*NH, blocks), blockIdx.x = b*NH + h and
// blockIdx.y the query block counted from the end (the longest rows start first, for a short
// tail); its q rows and its key/value head's k and v (query head h reads kv head h / G).
struct QueryBlock {
  int b, h, qb;
  int qs, ks, ys;  // row strides of q, of k and v, of y, elements
  const bf16 *qh, *kh, *vh;
  std::size_t qtile, ktile;  // elements between 64-row tiles of q and of k, v
};
template <int kD>
__device__ inline QueryBlock query_block(const bf16* q, const bf16* k, const bf16* v, int T, int NH, int NKV, int qs,
                                         int ks) {
  QueryBlock a;
  a.b = blockIdx.x / NH;
  a.h = blockIdx.x % NH;
  const int kvh = a.h / (NH / NKV);
  a.qb = gridDim.y - 1 - blockIdx.y;
  a.qs = qs;
  a.ks = ks;
  a.ys = NH * kD;
  a.qh = q + Tiles<kD>::head_start(a.b, a.h, T, qs);
  a.kh = k + Tiles<kD>::head_start(a.b, kvh, T, ks);
  a.vh = v + Tiles<kD>::head_start(a.b, kvh, T, ks);
  a.qtile = static_cast<std::size_t>(kBlock) * a.qs;
  a.ktile = static_cast<std::size_t>(kBlock) * a.ks;
  return a;
}

// A 16-row tile's end: the quad's shares of the row sums added, o / l rounded to y (rows row0
// and row0 + 8 of the head's rows, `ld` apart) and lse = m + log l in natural units of the
// scaled scores: ln(sum e^z) = (m + log2 l) / log2 e.
template <int NF>
__device__ inline void finish_rows(bf16* y_head, int ld, float* lse_head, const float (&acc)[NF][4], int row0,
                                   float m0, float m1, float l0, float l1, int t) {
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

// The query block of a dQ-from-dS CTA (backward variants 2 and 3): grid (B*NH, blocks),
// blockIdx.x = b*NH + h, blockIdx.y the query block from the end (the longest first); its
// key/value head's K rows and its own dS^T tiles (key blocks 0..qb, one after another).
struct DsQueryBlock {
  int b, h, qb;
  int ks;                // row stride of k, elements
  std::size_t ktile;     // elements between 64-row tiles of k
  const bf16 *kh, *dsq;  // the kv head's first K row; the block's first dS^T tile
};
template <int kD>
__device__ inline DsQueryBlock ds_query_block(const bf16* ds, const bf16* k, int T, int NH, int NKV, int ks) {
  DsQueryBlock a;
  a.b = blockIdx.x / NH;
  a.h = blockIdx.x % NH;
  a.qb = gridDim.y - 1 - blockIdx.y;
  a.ks = ks;
  a.ktile = static_cast<std::size_t>(kBlock) * a.ks;
  a.kh = k + Tiles<kD>::head_start(a.b, a.h / (NH / NKV), T, ks);
  a.dsq = ds + ds_tile_offset(blockIdx.x, T / kBlock, a.qb, 0);
  return a;
}

// ---- host side ---------------------------------------------------------------------------

// The shape's checks, shared by forward and backward; rows as the kernels take them (int).
inline void check_shape(const FlashShape& s) {
  require(s.B > 0 && s.NH > 0 && s.NKV > 0 && s.NH % s.NKV == 0,
          "flash attention: B, NH, NKV positive, NH a multiple of NKV");
  require(flash_head_dim_supported(s.HD), "flash attention: the head size must be 64 or 128");
  require(s.T > 0 && s.T % kBlock == 0, "flash attention: T must be a positive multiple of 64");
  require(static_cast<long long>(s.B) * s.NH <= 0x7fffffffLL && s.T / kBlock <= 65535,
          "flash attention: grid too large");
  require(s.q_row >= static_cast<long long>(s.NH) * s.HD && s.kv_row >= static_cast<long long>(s.NKV) * s.HD &&
              s.q_row <= 0x7fffffffLL && s.kv_row <= 0x7fffffffLL,
          "flash attention: q rows must hold NH heads, k and v rows NKV heads");
  require(s.q_row % 8 == 0 && s.kv_row % 8 == 0, "flash attention: rows must be 16-byte aligned (multiples of 8)");
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

// Calls f(std::integral_constant<int, HD>) for the head size: the kernels' one dispatch.
template <typename F>
inline void with_head_dim(int head_dim, F&& f) {
  switch (head_dim) {
    case 64: f(std::integral_constant<int, 64>{}); break;
    case 128: f(std::integral_constant<int, 128>{}); break;
    default: require(false, "flash attention: the head size must be 64 or 128");
  }
}

// The forward variant's kernel (flash_attention_forward.cu), for flash_kernel_resources.
template <int kD>
FlashKernelResources forward_resources(int forward_variant);

// The kernels on Hopper's wgmma (built for sm_90a, explicitly instantiated for heads of 64 and
// 128): whether this build and device can run them (flash_attention_backward_wgmma.cu), forward
// variant 2 (flash_attention_forward_wgmma.cu), backward variant 3's two kernels
// (flash_attention_backward_wgmma.cu: resources, 2 into out, and their launch after the delta
// kernel, with variant 2's arguments and dS workspace, and the column sums only they write).
bool flash_wgmma_available();
template <int kD>
FlashKernelResources flash_forward_wgmma_resources();
template <int kD>
void launch_flash_forward_wgmma(bf16* y, float* lse, const bf16* q, const bf16* k, const bf16* v, const FlashShape& s,
                                float scale_log2, cudaStream_t stream);
template <int kD>
int flash_backward_wgmma_resources(FlashKernelResources* out);
template <int kD>
void launch_flash_backward_wgmma(bf16* dq, bf16* dk, bf16* dv, bf16* ds, const bf16* q, const bf16* k, const bf16* v,
                                 const bf16* dy, const float* lse, const float* delta, const FlashShape& s, float scale,
                                 const FlashColumnSums& sums, cudaStream_t stream);

}  // namespace gpuaccept::train::flash
