// Causal grouped-query attention without the T x T matrix in memory (FlashAttention-2, Dao
// 2023) for a head size of 128 and T a multiple of 64 (kernels.h gives the interface). q, y,
// dq, dy are token-major (B, T, NH, 128), k, v, dk, dv (B, T, NKV, 128); query head h reads
// key/value head h / G, G = NH / NKV. ddp's kernels (ddp/gpu/kernels/flash_attention.cu, head
// size 64, one key/value head per query head) are the model for these.
//
// Forward, per (b, h) and block of 64 queries (4 warps, 16 query rows each), over key blocks
// 0..own (those above the diagonal are skipped):
//   s = q k^T * scale;  m' = max(m, rowmax s);  p = exp(s - m');  l = l e^(m-m') + rowsum p;
//   o = o e^(m-m') + p v;  at the end o /= l and lse = m + log l (kept for backward).
// Backward (dS = P o (dP - delta), delta = rowsum(dO o O), P = exp(s - lse) recomputed):
//   per (b, kv head) and block of 64 keys:  dV = sum_{g, i} P^T dO,  dK = scale sum_{g, i} dS^T Q
//     over the G query heads g of the group and the query blocks i >= own: the group's sum is
//     the CTA's own loop, so no two CTAs write the same rows of dK and dV;
//   per (b, h) and block of 64 queries:     dQ = scale sum_j dS K   (key blocks j <= own).
// No atomics anywhere: every value is summed in a fixed order, the same every run.
// Backward variants (kernels.h, GPUACCEPT_FLASH_BWD via attention.h): the dK/dV kernel with
// Q/dO double-buffered (1 CTA/SM) or single-buffered (2 CTAs/SM, <= 128 registers), and with
// dQ in its own kernel (above) or fused into the dK/dV kernel (2, 3: dQ = dS K from the dS^T
// already in shared memory, summed over key blocks in an fp32 workspace in a fixed order that
// per-tile counters enforce -- the one place with atomic adds, serialized, so still
// deterministic; see "backward: dK, dV"), or (4) with the dK/dV kernel writing its dS^T tiles
// (bf16) to a workspace and a dQ kernel that only sums dS K from them: five products a tile in
// all instead of seven, no waits, the same order every run (see "backward: dQ from dS").
//
// The matrix products are tensor-core mma.sync m16n8k16 (bf16 in, fp32 accumulate) on
// fragments loaded from shared memory with ldmatrix. Softmax runs in registers on the
// accumulator fragments: an m16n8 accumulator holds, in thread (g = lane/4, t = lane%4), rows
// g and g+8, columns 2t and 2t+1 -- the places a 16x16 A operand wants them, so P goes from
// one product into the next without leaving registers. In the dK/dV kernel 8 warps share a
// key block: warp (kw, half) computes P^T and dS^T for keys 16 kw.. and queries 32 half..,
// puts them in shared memory (bf16), and then accumulates dV and dK for keys 16 kw.. and
// head channels 64 half..: 64 fp32 accumulators a thread instead of 128.
#include <nvtx3/nvToolsExt.h>

#include "fsdp-lora/gpu/kernels/common.cuh"
#include "train/kernels/tensor_core.cuh"

namespace gpuaccept::fsdp::gpu {

namespace {

namespace dd = detail::dd;
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

// A 64 x 128 tile (64 consecutive positions, rows `ld` elements apart) into shared memory.
__device__ inline void load_tile(bf16* dst, const bf16* src, int ld) {
  for (int i = threadIdx.x; i < kBlock * kD / 8; i += blockDim.x) {
    const int row = i / (kD / 8), col = (i % (kD / 8)) * 8;
    copy_async16(dst + row * kStride + col, src + static_cast<std::size_t>(row) * ld + col);
  }
}
// 64 floats (one per row of a block).
__device__ inline void load_row_values(float* dst, const float* src) {
  if (threadIdx.x < kBlock / 4) copy_async16(dst + threadIdx.x * 4, src + threadIdx.x * 4);
}

template <typename Kernel>
void allow_shared(Kernel kernel, int bytes) {
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
#pragma unroll
    for (int d2 = 0; d2 < ND / 2; ++d2) {
      uint32_t f[4];
      ldmatrix_x4_trans(f, b + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * kStride + d2 * 16 + (lane / 16) * 8);
      mma(acc[2 * d2], a, f[0], f[1]);
      mma(acc[2 * d2 + 1], a, f[2], f[3]);
    }
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
#pragma unroll
    for (int d2 = 0; d2 < ND / 2; ++d2) {
      uint32_t f[4];
      ldmatrix_x4_trans(f, b + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * kStride + d2 * 16 + (lane / 16) * 8);
      mma(acc[2 * d2], a, f[0], f[1]);
      mma(acc[2 * d2 + 1], a, f[2], f[3]);
    }
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

// ---- forward -----------------------------------------------------------------------------
// Shared memory: q, then k and v twice (the tile in use and the next one).
constexpr int kForwardShared = 5 * kTile * static_cast<int>(sizeof(bf16));

// Online softmax of one 16-row tile's scores s (raw q k^T, 64 keys): rows g and g + 8 are
// this thread's (running max m in log2 units of the scaled scores, this thread's share l of
// the row sum). acc is rescaled to the new max; s becomes p = 2^(s * scale_log2 - m).
__device__ inline void online_softmax(float (&s)[8][4], float (&acc)[16][4], float& m0, float& m1, float& l0,
                                      float& l1, float scale_log2) {
  float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
  for (int n = 0; n < 8; ++n) {
    mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
    mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
  }
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
  // Every row sees key 0, so after the first block m is finite; before it, m = -inf and the
  // rescale factors are 0.
  const float n0 = fmaxf(m0, mx0 * scale_log2), n1 = fmaxf(m1, mx1 * scale_log2);
  const float a0 = exp2f(m0 - n0), a1 = exp2f(m1 - n1);
  m0 = n0;
  m1 = n1;
  float r0 = 0.f, r1 = 0.f;
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      s[n][j] = exp2f(fmaf(s[n][j], scale_log2, -m0));  // masked scores are -inf: p = 0
      s[n][2 + j] = exp2f(fmaf(s[n][2 + j], scale_log2, -m1));
      r0 += s[n][j];
      r1 += s[n][2 + j];
    }
  l0 = l0 * a0 + r0;  // the quad adds its shares at the end
  l1 = l1 * a1 + r1;
#pragma unroll
  for (int n = 0; n < 16; ++n) {
    acc[n][0] *= a0, acc[n][1] *= a0;
    acc[n][2] *= a1, acc[n][3] *= a1;
  }
}

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

// grid (B*NH, T/64): query_block's layout.
__global__ void __launch_bounds__(kThreads, 2) flash_forward_kernel(bf16* y, float* lse, const bf16* q,
                                                                    const bf16* k, const bf16* v, int T, int NH,
                                                                    int NKV, float scale_log2) {
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sq = reinterpret_cast<bf16*>(smem);
  bf16* skv = sq + kTile;  // [buffer][k, v]
  const QueryBlock at = query_block(q, k, v, T, NH, NKV);
  const int b = at.b, h = at.h, qb = at.qb, qs = at.qs, ks = at.ks;
  const bf16 *qh = at.qh, *kh = at.kh, *vh = at.vh;
  const std::size_t qtile = at.qtile, ktile = at.ktile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r = warp * 16 + g;  // this thread's rows, counted from the block's first: r and r + 8

  load_tile(sq, qh + qb * qtile, qs);
  load_tile(skv, kh, ks);
  load_tile(skv + kTile, vh, ks);
  commit();

  Operand qa;
  float acc[16][4], s[8][4];
  zero(acc);
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  for (int kb = 0; kb <= qb; ++kb) {
    const bf16* sk = next_kv_block(skv, kh, vh, kb, qb, ktile, ks);
    const bf16* sv = sk + kTile;
    if (kb == 0) load_a(qa, sq + warp * 16 * kStride, lane);
    zero(s);
    mma_abt(s, qa, sk, lane);  // s = q k^T
    if (kb == qb) mask_diagonal<true>(s, r, 0, t, -INFINITY);
    online_softmax(s, acc, m0, m1, l0, l1, scale_log2);
    mma_pb(acc, s, sv, lane);  // o += p v
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  finish_rows(y + head_start(b, h, T, NH), qs, lse + static_cast<std::size_t>(blockIdx.x) * T, acc, qb * kBlock + r, m0,
              m1, l0, l1, t);
}

// ---- forward, 128 queries a block (forward variant 1) ------------------------------------
// The same online softmax with each warp on 32 query rows (two 16-row tiles) instead of 16:
// every K and V fragment read from shared memory feeds both tiles' products, so a product
// costs about half the shared-memory reads (FlashAttention-2's 128 x 64 tiles for head size
// 128). Q is read from shared memory a k-step at a time (two tiles in registers would not fit
// beside the accumulators). A warp whose 32 rows all lie before a key block skips it. T % 128.
constexpr int kBlockM = 2 * kBlock;  // 128 queries
constexpr int kForward128Shared = 6 * kTile * static_cast<int>(sizeof(bf16));  // q (128 rows), k and v twice

// s[i] (16 x 64) += rows 16i .. 16i + 15 (from a_rows on) x B^T, B the 64 rows of a tile.
__device__ inline void mma_abt2(float (&s)[2][8][4], const bf16* a_rows, const bf16* b, int lane) {
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

// acc[i] (16 x 128) += p[i] (16 x 64, accumulators turned A operands) * V (64 rows of a tile).
__device__ inline void mma_pb2(float (&acc)[2][16][4], const float (&p)[2][8][4], const bf16* b, int lane) {
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
__global__ void __launch_bounds__(kThreads, 2) flash_forward128_kernel(bf16* y, float* lse, const bf16* q,
                                                                       const bf16* k, const bf16* v, int T, int NH,
                                                                       int NKV, float scale_log2) {
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sq = reinterpret_cast<bf16*>(smem);  // 128 rows, kStride apart (two 64-row tiles back to back)
  bf16* skv = sq + 2 * kTile;                 // [buffer][k, v]
  const QueryBlock at = query_block(q, k, v, T, NH, NKV);
  const int b = at.b, h = at.h, qb = at.qb, qs = at.qs, ks = at.ks;
  const bf16 *qh = at.qh, *kh = at.kh, *vh = at.vh;
  const std::size_t qtile = at.qtile, ktile = at.ktile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r = warp * 32 + g;  // this thread's rows from the block's first: r, r + 8 (tile 0), r + 16, r + 24 (tile 1)

  load_tile(sq, qh + (2 * qb) * qtile, qs);
  load_tile(sq + kTile, qh + (2 * qb + 1) * qtile, qs);
  load_tile(skv, kh, ks);
  load_tile(skv + kTile, vh, ks);
  commit();

  float acc[2][16][4], s[2][8][4];
  zero(acc[0]);
  zero(acc[1]);
  float m[2][2] = {{-INFINITY, -INFINITY}, {-INFINITY, -INFINITY}}, l[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
  const int last = 2 * qb + 1;  // the key blocks up to the block's last row
  for (int kb = 0; kb <= last; ++kb) {
    const bf16* sk = next_kv_block(skv, kh, vh, kb, last, ktile, ks);
    const bf16* sv = sk + kTile;
    const int col0 = kb * kBlock - qb * kBlockM;  // the key block's first key, from the block's first row
    if (col0 <= warp * 32 + 31) {                 // some key at or before this warp's last row
      zero(s[0]);
      zero(s[1]);
      mma_abt2(s, sq + warp * 32 * kStride, sk, lane);  // s = q k^T
      if (col0 + kBlock - 1 > warp * 32) {               // some key after this warp's first row
        mask_diagonal<true>(s[0], r, col0, t, -INFINITY);
        mask_diagonal<true>(s[1], r + 16, col0, t, -INFINITY);
      }
      online_softmax(s[0], acc[0], m[0][0], m[0][1], l[0][0], l[0][1], scale_log2);
      online_softmax(s[1], acc[1], m[1][0], m[1][1], l[1][0], l[1][1], scale_log2);
      mma_pb2(acc, s, sv, lane);  // o += p v
    }
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
    finish_rows(y + head_start(b, h, T, NH), qs, lse + static_cast<std::size_t>(blockIdx.x) * T, acc[i],
                qb * kBlockM + r + 16 * i, m[i][0], m[i][1], l[i][0], l[i][1], t);
}

// ---- backward: delta ---------------------------------------------------------------------
// delta[b,h,t] = sum_d dy[b,t,h,d] * y[b,t,h,d]. 16 lanes per row of 128, 16 bytes each.
constexpr int kDeltaLanes = kD / 8;
__global__ void attention_delta_kernel(float* delta, const bf16* dy, const bf16* y, int B, int T, int NH) {
  const long long thread = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long item = thread / kDeltaLanes;  // (b, t, h)
  const bool inside = item < static_cast<long long>(B) * T * NH;  // every lane joins the shuffles
  float acc = 0.f;
  if (inside) {
    const std::size_t at = static_cast<std::size_t>(item) * kD + (thread % kDeltaLanes) * 8;
    float x[8], w[8];
    dd::load_bf16<8>(x, dy + at);
    dd::load_bf16<8>(w, y + at);
#pragma unroll
    for (int i = 0; i < 8; ++i) acc = fmaf(x[i], w[i], acc);
  }
  for (int offset = kDeltaLanes / 2; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (inside && thread % kDeltaLanes == 0) {
    const int h = static_cast<int>(item % NH);
    const long long bt = item / NH;
    const int tt = static_cast<int>(bt % T), b = static_cast<int>(bt / T);
    delta[(static_cast<std::size_t>(b) * NH + h) * T + tt] = acc;
  }
}

// ---- backward: dK, dV (and, in the fused variants, dQ) ------------------------------------
// One CTA per (b, kv head, block of 64 keys), looping over the G query heads of the group and,
// for each, the query blocks at or after its own. Shared memory: k, v; then q, dO, lse and
// delta kBuffers times (2: in use, next -- the next step's loads overlap this step's products;
// 1: the next step is loaded after this one, and 2 CTAs per SM hide the loads); then P^T and
// dS^T (64 keys x 64 queries, bf16).
//
// kFusedDq: the CTA also computes dQ_j = dS K_j (64 queries x 128, the key block j's share of
// dQ for that query block, from dS^T already in shared memory: no second recomputation of P
// and dS, no dQ kernel) and adds it to an fp32 workspace dq_ws (B, NH, T, 128) in a fixed
// order: for query tile (b, h, i) the key blocks j = 0, 1, .., i, one after another. A counter
// per tile (dq_sem, zeroed before the launch) says how many key blocks have added theirs; key
// block j waits (thread 0 spinning on an acquire load) until it reads j, adds (j = 0 stores,
// 0 < j < i adds with red.add.v2.f32, j = i reads the sum, adds its own and writes dq in bf16,
// times the scale) and, one phase later (so that the release finds the adds long done), bumps
// the counter with a release. The sums are so always ((d_0 + d_1) + d_2) + ..: the same bits
// every run. The fused CTAs walk the query blocks from the last down to their own (heads
// inside), so that key blocks j and j - 1 reach a tile at about the same step; a CTA only ever
// waits for the CTA of the previous key block, which has a lower linear block index (grid x is
// b * NKV + kv head, y the key block) and so was started first.
constexpr int kRowValuesCount = 2 * kBlock;  // floats: lse and delta of one query block
template <int kBuffers>
constexpr int dkdv_shared_bytes() {
  return (2 * kTile + kBuffers * 2 * kTile + 2 * kBlock * kPStride) * static_cast<int>(sizeof(bf16)) +
         kBuffers * kRowValuesCount * static_cast<int>(sizeof(float));
}

// Variant 4's workspace of dS^T tiles (bf16, 64 keys x 64 queries, row-major): per (b, query head),
// the causal tiles (query block i, key block j <= i) at i (i + 1) / 2 + j, so that a query block's
// tiles j = 0..i lie one after another.
__device__ inline std::size_t ds_tile_offset(int bh, int blocks, int qb, int kb) {
  const std::size_t tiles_per_head = static_cast<std::size_t>(blocks) * (blocks + 1) / 2;
  return (static_cast<std::size_t>(bh) * tiles_per_head + static_cast<std::size_t>(qb) * (qb + 1) / 2 + kb) *
         (kBlock * kBlock);
}
// The dS^T tile in shared memory (rows kPStride apart) to its place in the workspace.
__device__ inline void store_ds_tile(bf16* dst, const bf16* sds) {
  for (int i = threadIdx.x; i < kBlock * kBlock / 8; i += blockDim.x) {
    const int row = i / (kBlock / 8), col = (i % (kBlock / 8)) * 8;
    *reinterpret_cast<uint4*>(dst + row * kBlock + col) = *reinterpret_cast<const uint4*>(sds + row * kPStride + col);
  }
}

// acc (16 x 8ND) += A (16 x 64) * B (64 rows of a tile from `b` on), A stored transposed in
// shared memory: A[m][k] at a_cols[k * kPStride + m] (a_cols at the first of the 16 columns m).
template <int ND>
__device__ inline void mma_tsb(float (&acc)[ND][4], const bf16* a_cols, const bf16* b, int lane) {
#pragma unroll
  for (int kk = 0; kk < kBlock / 16; ++kk) {
    uint32_t a[4];
    ldmatrix_x4_trans(a, a_cols + (kk * 16 + lane % 8 + (lane / 16) * 8) * kPStride + ((lane / 8) % 2) * 8);
#pragma unroll
    for (int d2 = 0; d2 < ND / 2; ++d2) {
      uint32_t f[4];
      ldmatrix_x4_trans(f, b + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * kStride + d2 * 16 + (lane / 16) * 8);
      mma(acc[2 * d2], a, f[0], f[1]);
      mma(acc[2 * d2 + 1], a, f[2], f[3]);
    }
  }
}

__device__ inline int load_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ inline void add_release(int* p, int v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
__device__ inline void red_add2(float* p, float a, float b) {
  asm volatile("red.relaxed.gpu.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(p), "f"(a), "f"(b) : "memory");
}

// grid (B*NKV, T/64): blockIdx.x = b*NKV + kv head, blockIdx.y the key block (block 0 sees
// every query: the longest first).
template <int kBuffers, bool kFusedDq, int kMinBlocks, bool kStoreDs>
__global__ void __launch_bounds__(kDkdvThreads, kMinBlocks) flash_backward_dkdv_kernel(
    bf16* dk, bf16* dv, bf16* dq, float* dq_ws, int* dq_sem, bf16* ds, const bf16* q, const bf16* k, const bf16* v,
    const bf16* dy, const float* lse, const float* delta, int T, int NH, int NKV, float scale, float scale_log2) {
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
  const int qs = NH * kD, ks = NKV * kD;
  const std::size_t qtile = static_cast<std::size_t>(kBlock) * qs, ktile = static_cast<std::size_t>(kBlock) * ks;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int kw = warp % 4, half = warp / 4;  // keys 16 kw .. +16; queries (then head channels) of this half
  const int r = kw * 16 + g;                 // this thread's keys, counted from the block's first: r and r + 8
  const int blocks = T / kBlock, per_head = blocks - kb, steps = G * per_head;

  // Step i: its query head and query block. Unfused: head kvh * G + i / per_head, block
  // kb + i % per_head; fused: head kvh * G + i % G, block blocks - 1 - i / G.
  auto step_head = [&](int i) { return kvh * G + (kFusedDq ? i % G : i / per_head); };
  auto step_block = [&](int i) { return kFusedDq ? blocks - 1 - i / G : kb + i % per_head; };
  auto load_step = [&](int i, int buf) {
    const int h = step_head(i), qb = step_block(i);
    bf16* dst = sqdo + buf * 2 * kTile;
    load_tile(dst, q + head_start(b, h, T, NH) + qb * qtile, qs);
    load_tile(dst + kTile, dy + head_start(b, h, T, NH) + qb * qtile, qs);
    const std::size_t rows = (static_cast<std::size_t>(b) * NH + h) * T + static_cast<std::size_t>(qb) * kBlock;
    load_row_values(srow + buf * kRowValuesCount, lse + rows);
    load_row_values(srow + buf * kRowValuesCount + kBlock, delta + rows);
    commit();
  };
  load_tile(sk, k + head_start(b, kvh, T, NKV) + kb * ktile, ks);
  load_tile(sv, v + head_start(b, kvh, T, NKV) + kb * ktile, ks);
  load_step(0, 0);  // one group with k and v

  float dk_acc[8][4], dv_acc[8][4];  // keys r, r + 8 x head channels 64 half + (8n + 2t, +1)
  zero(dk_acc);
  zero(dv_acc);
  int* pending = nullptr;  // fused, thread 0: the counter to bump for the previous step
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
    mma_abt_smem(p, sk + kw * 16 * kStride, sq + half * 32 * kStride, lane);
    // dP^T (16 keys x 32 queries) = v dO^T
    zero(dp);
    mma_abt_smem(dp, sv + kw * 16 * kStride, sdo + half * 32 * kStride, lane);
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
    if constexpr (kFusedDq) {
      if (pending != nullptr) {  // the previous step's adds, issued a phase ago, are done
        add_release(pending, 1);
        pending = nullptr;
      }
    }
    mma_sb(dv_acc, sp + kw * 16 * kPStride, sdo + half * 64, lane);   // dV += P^T dO
    mma_sb(dk_acc, sds + kw * 16 * kPStride, sq + half * 64, lane);   // dK += dS^T Q
    if constexpr (kStoreDs) store_ds_tile(ds + ds_tile_offset(b * NH + step_head(i), blocks, qb, kb), sds);
    if constexpr (kFusedDq) {
      // dQ_kb (queries 16 kw + g, +8 x head channels 64 half + 8n + 2t, +1) = dS K
      float dq_acc[8][4];
      zero(dq_acc);
      mma_tsb(dq_acc, sds + kw * 16, sk + half * 64, lane);
      const int h = step_head(i);
      const std::size_t tile = (static_cast<std::size_t>(b) * NH + h) * blocks + qb;
      int* sem = dq_sem + tile;
      if (kb > 0) {
        if (threadIdx.x == 0)
          while (load_acquire(sem) < kb) {
          }
        __syncthreads();  // every thread's reads and adds after the acquire
      }
      float* ws = dq_ws + (tile * kBlock + kw * 16 + g) * kD + half * 64 + 2 * t;  // row g; row g + 8 is 8 kD on
      if (qb == kb) {  // the last key block of this tile: the sum, scaled, in bf16
        bf16* out = dq + head_start(b, h, T, NH) + static_cast<std::size_t>(qb * kBlock + kw * 16 + g) * qs +
                    half * 64 + 2 * t;
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float2 s = make_float2(0.f, 0.f);
            if (kb > 0) s = __ldcg(reinterpret_cast<const float2*>(ws + e * 8 * kD + n * 8));
            *reinterpret_cast<__nv_bfloat162*>(out + static_cast<std::size_t>(e) * 8 * qs + n * 8) =
                __floats2bfloat162_rn((s.x + dq_acc[n][2 * e]) * scale, (s.y + dq_acc[n][2 * e + 1]) * scale);
          }
      } else {
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float* at = ws + e * 8 * kD + n * 8;
            if (kb == 0)
              __stcg(reinterpret_cast<float2*>(at), make_float2(dq_acc[n][2 * e], dq_acc[n][2 * e + 1]));
            else
              red_add2(at, dq_acc[n][2 * e], dq_acc[n][2 * e + 1]);
          }
        if (threadIdx.x == 0) pending = sem;
      }
    }
    __syncthreads();  // every warp is done with this buffer and P^T, dS^T before they are refilled
    if (kBuffers == 1 && i + 1 < steps) load_step(i + 1, 0);
  }
  if constexpr (kFusedDq) {
    if (pending != nullptr) add_release(pending, 1);  // after the loop's last barrier: every add issued
  }
  const std::size_t out = head_start(b, kvh, T, NKV) + static_cast<std::size_t>(half) * 64;
  store_rows(dk + out, ks, dk_acc, kb * kBlock + r, scale, scale, t);
  store_rows(dv + out, ks, dv_acc, kb * kBlock + r, 1.f, 1.f, t);
}

// ---- backward: dQ --------------------------------------------------------------------------
// One CTA per (b, h, block of 64 queries; 4 warps x 16 queries), over the key blocks it sees.
// Shared memory: q, dO, then k and v twice (in use, next).
constexpr int kDqShared = 6 * kTile * static_cast<int>(sizeof(bf16));

__global__ void __launch_bounds__(kThreads, 2) flash_backward_dq_kernel(bf16* dq, const bf16* q, const bf16* k,
                                                                        const bf16* v, const bf16* dy,
                                                                        const float* lse, const float* delta, int T,
                                                                        int NH, int NKV, float scale,
                                                                        float scale_log2) {
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sq = reinterpret_cast<bf16*>(smem);
  bf16* sdo = sq + kTile;
  bf16* skv = sdo + kTile;  // [buffer][k, v]
  const int b = blockIdx.x / NH, h = blockIdx.x % NH, kvh = h / (NH / NKV);
  const int qb = gridDim.y - 1 - blockIdx.y;
  const int qs = NH * kD, ks = NKV * kD;
  const std::size_t qtile = static_cast<std::size_t>(kBlock) * qs, ktile = static_cast<std::size_t>(kBlock) * ks;
  const bf16* kh = k + head_start(b, kvh, T, NKV);
  const bf16* vh = v + head_start(b, kvh, T, NKV);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r = warp * 16 + g;
  const int row0 = qb * kBlock + r;

  load_tile(sq, q + head_start(b, h, T, NH) + qb * qtile, qs);
  load_tile(sdo, dy + head_start(b, h, T, NH) + qb * qtile, qs);
  load_tile(skv, kh, ks);
  load_tile(skv + kTile, vh, ks);
  commit();
  const float* L = lse + static_cast<std::size_t>(blockIdx.x) * T;
  const float* D = delta + static_cast<std::size_t>(blockIdx.x) * T;
  const float l0 = L[row0] * kLog2e, l1 = L[row0 + 8] * kLog2e, d0 = D[row0], d1 = D[row0 + 8];

  float dq_acc[16][4], p[8][4], dp[8][4];
  zero(dq_acc);
  for (int kb = 0; kb <= qb; ++kb) {
    const bf16* sk = next_kv_block(skv, kh, vh, kb, qb, ktile, ks);
    const bf16* sv = sk + kTile;
    zero(p);
    mma_abt_smem(p, sq + warp * 16 * kStride, sk, lane);  // q k^T
    zero(dp);
    mma_abt_smem(dp, sdo + warp * 16 * kStride, sv, lane);  // dO v^T
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
    mma_pb(dq_acc, dp, sk, lane);  // dQ += dS k
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  store_rows(dq + head_start(b, h, T, NH), qs, dq_acc, row0, scale, scale, t);
}

// ---- backward: dQ from dS (variant 4) ----------------------------------------------------
// dQ = scale sum_j dS_j K_j over the key blocks j <= own, from the dS^T tiles the dK/dV kernel
// wrote (the bf16 values its dK product used): one product a tile where the dQ kernel above
// recomputes P and dP first (three). Summed in key-block order inside one CTA: the same bits
// every run. One CTA per (b, h, block of 64 queries; 4 warps x 16 queries), the longest first;
// K and dS^T tiles double-buffered.
constexpr int kDqFromDsShared = (2 * kTile + 2 * kBlock * kPStride) * static_cast<int>(sizeof(bf16));

// A 64 x 64 dS^T tile of the workspace into shared memory (rows kPStride apart).
__device__ inline void load_ds_tile(bf16* dst, const bf16* src) {
  for (int i = threadIdx.x; i < kBlock * kBlock / 8; i += blockDim.x) {
    const int row = i / (kBlock / 8), col = (i % (kBlock / 8)) * 8;
    copy_async16(dst + row * kPStride + col, src + row * kBlock + col);
  }
}

__global__ void __launch_bounds__(kThreads, 3) flash_backward_dq_from_ds_kernel(bf16* dq, const bf16* ds,
                                                                               const bf16* k, int T, int NH, int NKV,
                                                                               float scale) {
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sk = reinterpret_cast<bf16*>(smem);  // [buffer] K tile
  bf16* sds = sk + 2 * kTile;                 // [buffer] dS^T tile
  const int b = blockIdx.x / NH, h = blockIdx.x % NH, kvh = h / (NH / NKV);
  const int qb = gridDim.y - 1 - blockIdx.y, blocks = T / kBlock;
  const int ks = NKV * kD;
  const std::size_t ktile = static_cast<std::size_t>(kBlock) * ks;
  const bf16* kh = k + head_start(b, kvh, T, NKV);
  const bf16* dsq = ds + ds_tile_offset(blockIdx.x, blocks, qb, 0);  // this query block's tiles, j = 0..qb
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  load_tile(sk, kh, ks);
  load_ds_tile(sds, dsq);
  commit();
  float dq_acc[16][4];
  zero(dq_acc);
  for (int kb = 0; kb <= qb; ++kb) {
    if (kb < qb) {  // the other buffer is free since the last block's closing barrier
      const int next = (kb + 1) % 2;
      load_tile(sk + next * kTile, kh + (kb + 1) * ktile, ks);
      load_ds_tile(sds + next * kBlock * kPStride, dsq + static_cast<std::size_t>(kb + 1) * kBlock * kBlock);
      commit();
      wait<1>();
    } else {
      wait<0>();
    }
    __syncthreads();
    const int cur = kb % 2;
    mma_tsb(dq_acc, sds + cur * kBlock * kPStride + warp * 16, sk + cur * kTile, lane);  // dQ += dS K
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  store_rows(dq + head_start(b, h, T, NH), NH * kD, dq_acc, qb * kBlock + warp * 16 + g, scale, scale, t);
}

void check_shape(const char* what, int B, int T, int NH, int NKV) {
  (void)what;
  require(B > 0 && NH > 0 && NKV > 0 && NH % NKV == 0, "flash attention: B, NH, NKV positive, NH a multiple of NKV");
  require(T > 0 && T % kBlock == 0, "flash attention: T must be a positive multiple of 64");
  require(static_cast<long long>(B) * NH <= 0x7fffffffLL && T / kBlock <= 65535, "flash attention: grid too large");
}

// An NVTX range for the profilers (nsys), open for the object's lifetime.
struct NvtxRange {
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace

void flash_attention_forward(bf16* y, float* lse, const bf16* q, const bf16* k, const bf16* v, int B, int T, int NH,
                             int NKV, cudaStream_t stream, int variant) {
  check_shape("forward", B, T, NH, NKV);
  require(dd::aligned16(q) && dd::aligned16(k) && dd::aligned16(v) && dd::aligned16(y),
          "flash_attention_forward: q, k, v, y must be 16-byte aligned");
  require(variant >= 0 && variant < kFlashForwardVariants, "flash_attention_forward: no such forward variant");
  NvtxRange range("flash_attention_forward");
  const float scale = 1.f / std::sqrt(static_cast<float>(kD));
  if (variant == 1 && T % kBlockM == 0) {
    static const bool allowed = (allow_shared(flash_forward128_kernel, kForward128Shared), true);
    (void)allowed;
    flash_forward128_kernel<<<dim3(B * NH, T / kBlockM), kThreads, kForward128Shared, stream>>>(
        y, lse, q, k, v, T, NH, NKV, scale * kLog2e);
  } else {
    static const bool allowed = (allow_shared(flash_forward_kernel, kForwardShared), true);
    (void)allowed;
    flash_forward_kernel<<<dim3(B * NH, T / kBlock), kThreads, kForwardShared, stream>>>(y, lse, q, k, v, T, NH, NKV,
                                                                                         scale * kLog2e);
  }
  check_launch("flash_attention_forward");
}

namespace {

// The backward variants (kernels.h): the dK/dV kernel's staging buffers, whether it computes
// dQ too, and the CTAs per SM it is compiled for.
template <int kBuffers, bool kFusedDq, int kMinBlocks, bool kStoreDs = false>
struct BackwardVariant {
  static constexpr int kShared = dkdv_shared_bytes<kBuffers>();
  static constexpr auto kernel = flash_backward_dkdv_kernel<kBuffers, kFusedDq, kMinBlocks, kStoreDs>;
  static constexpr bool fused = kFusedDq;
  static constexpr bool stores_ds = kStoreDs;
};
using Variant0 = BackwardVariant<2, false, 1>;  // double-buffered dK/dV, 1 CTA/SM; dQ kernel
using Variant1 = BackwardVariant<1, false, 2>;  // single-buffered dK/dV, 2 CTAs/SM; dQ kernel
using Variant2 = BackwardVariant<2, true, 1>;   // double-buffered, dQ fused (ordered fp32 adds)
using Variant3 = BackwardVariant<1, true, 2>;   // single-buffered, 2 CTAs/SM, dQ fused
using Variant4 = BackwardVariant<1, false, 2, true>;  // 1, writing dS^T; dQ from it (one product)
static_assert(kFlashBackwardVariants == 5);

// f(Variant) for the variant numbered `variant`.
template <typename F>
void with_variant(int variant, F&& f) {
  switch (variant) {
    case 0: f(Variant0{}); break;
    case 1: f(Variant1{}); break;
    case 2: f(Variant2{}); break;
    case 3: f(Variant3{}); break;
    case 4: f(Variant4{}); break;
    default: require(false, "flash attention: backward variant out of range (0..4)");
  }
}

template <typename Kernel>
FlashKernelResources resources(const char* name, Kernel kernel, int threads, int shared) {
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

}  // namespace

bool flash_backward_fuses_dq(int variant) { return variant == 2 || variant == 3; }
bool flash_backward_stores_ds(int variant) { return variant == 4; }

std::size_t flash_backward_dq_workspace_floats(int B, int T, int NH) {
  return static_cast<std::size_t>(B) * NH * T * kD;
}
std::size_t flash_backward_dq_semaphores(int B, int T, int NH) {
  return static_cast<std::size_t>(B) * NH * (T / kBlock);
}

int flash_kernel_resources(int variant, FlashKernelResources (&out)[3], int forward_variant) {
  int n = 0;
  out[n++] = forward_variant == 1 ? resources("forward128", flash_forward128_kernel, kThreads, kForward128Shared)
                                  : resources("forward", flash_forward_kernel, kThreads, kForwardShared);
  with_variant(variant, [&](auto v) {
    using V = decltype(v);
    out[n++] = resources(V::fused ? "dkdv_dq" : V::stores_ds ? "dkdv_ds" : "dkdv", V::kernel, kDkdvThreads, V::kShared);
    if (V::stores_ds)
      out[n++] = resources("dq_from_ds", flash_backward_dq_from_ds_kernel, kThreads, kDqFromDsShared);
    else if (!V::fused)
      out[n++] = resources("dq", flash_backward_dq_kernel, kThreads, kDqShared);
  });
  return n;
}

void flash_attention_backward(bf16* dq, bf16* dk, bf16* dv, float* delta, const bf16* dy, const bf16* y,
                              const float* lse, const bf16* q, const bf16* k, const bf16* v, int B, int T, int NH,
                              int NKV, cudaStream_t stream, int variant, float* dq_workspace, int* dq_semaphores,
                              bf16* ds_workspace) {
  check_shape("backward", B, T, NH, NKV);
  for (const void* p : {static_cast<const void*>(dq), static_cast<const void*>(dk), static_cast<const void*>(dv),
                        static_cast<const void*>(dy), static_cast<const void*>(y), static_cast<const void*>(q),
                        static_cast<const void*>(k), static_cast<const void*>(v), static_cast<const void*>(lse),
                        static_cast<const void*>(delta)})
    require(dd::aligned16(p), "flash_attention_backward: every buffer must be 16-byte aligned");
  require(variant >= 0 && variant < kFlashBackwardVariants, "flash_attention_backward: variant out of range (0..4)");
  const bool fused = flash_backward_fuses_dq(variant);
  require(!fused || (dq_workspace != nullptr && dq_semaphores != nullptr && dd::aligned16(dq_workspace)),
          "flash_attention_backward: the fused-dQ variants need the fp32 dq workspace and the semaphores");
  const bool stores_ds = flash_backward_stores_ds(variant);
  require(!stores_ds || (ds_workspace != nullptr && dd::aligned16(ds_workspace)),
          "flash_attention_backward: variant 4 needs the dS workspace (flash_backward_ds_workspace_elems)");
  static bool allowed[kFlashBackwardVariants] = {};
  if (!allowed[variant]) {
    with_variant(variant, [](auto v) { allow_shared(decltype(v)::kernel, decltype(v)::kShared); });
    allow_shared(flash_backward_dq_kernel, kDqShared);
    allow_shared(flash_backward_dq_from_ds_kernel, kDqFromDsShared);
    allowed[variant] = true;
  }
  NvtxRange range("flash_attention_backward");
  const float scale = 1.f / std::sqrt(static_cast<float>(kD));
  const long long threads = static_cast<long long>(B) * T * NH * kDeltaLanes;
  attention_delta_kernel<<<static_cast<unsigned>((threads + 255) / 256), 256, 0, stream>>>(delta, dy, y, B, T, NH);
  check_launch("flash_attention_backward (delta)");
  if (fused) {
    const cudaError_t rc =
        cudaMemsetAsync(dq_semaphores, 0, flash_backward_dq_semaphores(B, T, NH) * sizeof(int), stream);
    require(rc == cudaSuccess, "flash_attention_backward: cudaMemsetAsync of the dq semaphores failed");
  }
  with_variant(variant, [&](auto vv) {
    using V = decltype(vv);
    const auto kernel = V::kernel;
    kernel<<<dim3(B * NKV, T / kBlock), kDkdvThreads, V::kShared, stream>>>(
        dk, dv, dq, dq_workspace, dq_semaphores, ds_workspace, q, k, v, dy, lse, delta, T, NH, NKV, scale,
        scale * kLog2e);
  });
  check_launch("flash_attention_backward (dk, dv)");
  if (stores_ds) {
    flash_backward_dq_from_ds_kernel<<<dim3(B * NH, T / kBlock), kThreads, kDqFromDsShared, stream>>>(
        dq, ds_workspace, k, T, NH, NKV, scale);
    check_launch("flash_attention_backward (dq from ds)");
  } else if (!fused) {
    flash_backward_dq_kernel<<<dim3(B * NH, T / kBlock), kThreads, kDqShared, stream>>>(
        dq, q, k, v, dy, lse, delta, T, NH, NKV, scale, scale * kLog2e);
    check_launch("flash_attention_backward (dq)");
  }
}

}  // namespace gpuaccept::fsdp::gpu
