// Causal attention without the T x T matrix in memory (FlashAttention-2, Dao 2023), for a
// head size of 64 and T a multiple of 64. Per head, row-major q, k, v, o of shape (T, 64).
//
// Forward, per block of 64 queries (4 warps, 16 query rows each), over key blocks 0..own:
//   s = q k^T * scale;  m' = max(m, rowmax s);  p = exp(s - m');  l = l e^(m-m') + rowsum p;
//   o = o e^(m-m') + p v;  at the end o /= l and lse = m + log l (kept for backward).
// Backward (dS = P o (dP - delta), delta = rowsum(dO o O), P = exp(s - lse) recomputed):
//   per block of 64 keys:    dV = sum_i P^T dO,  dK = scale * sum_i dS^T Q   (query blocks i >= own)
//   per block of 64 queries: dQ = scale * sum_j dS K                          (key blocks j <= own)
// dQ gets its own pass so that no two blocks add into the same rows: no atomics, and the
// result is the same every run.
//
// The matrix products are tensor-core mma.sync m16n8k16 (bf16 in, fp32 accumulate) on
// fragments loaded from shared memory with ldmatrix. The helpers take M 16-row tiles per
// warp (each K or V fragment loaded then feeds 2 M products); every kernel uses M = 1 now
// (see kForwardTiles). Only the diagonal block of a causal row needs a mask; the blocks
// left of it are computed unmasked. Softmax runs in registers on the accumulator
// fragments: an m16n8 accumulator holds, in thread (g = lane/4, t = lane%4), rows g and
// g+8, columns 2t and 2t+1 -- the same places a 16x16 A operand wants them, so P goes from
// one product into the next without leaving registers.
#include "ddp/gpu/kernels/common.cuh"
#include "train/kernels/attention_delta.cuh"
#include "train/kernels/online_softmax.cuh"
#include "train/kernels/tensor_core.cuh"

namespace gpuaccept::ddp::gpu {

namespace {

using detail::aligned16;
using detail::check_launch;
using detail::require;

constexpr int kD = 64;        // head size
constexpr int kBlock = 64;    // queries (keys) per block
constexpr int kStride = 72;   // shared-memory row stride in bf16: 144 B keeps ldmatrix rows on distinct banks
constexpr int kThreads = 128; // backward: 4 warps x 16 rows
// 16-row tiles of queries per forward warp. Two tiles (2 warps of 32 rows) halve the
// ldmatrix traffic per product but took 184 us a layer against 160 us for one (4 warps of
// 16 rows) in GPT-2 124M on an H200: 234 registers a thread leave too few warps to hide
// latency (docs/performance.md).
constexpr int kForwardTiles = 1;
constexpr int kForwardThreads = kBlock / (16 * kForwardTiles) * 32;
constexpr float kLog2e = 1.4426950408889634f;

// Tensor-core and copy primitives: src/train/kernels/tensor_core.cuh.
using train::tc::commit;
using train::tc::copy_async16;
using train::tc::ldmatrix_x4;
using train::tc::ldmatrix_x4_trans;
using train::tc::mma;
using train::tc::pack;
using train::tc::wait;

// A 64 x 64 tile (64 consecutive rows, `ld` elements apart) into shared memory.
__device__ inline void load_tile(bf16* dst, const bf16* src, int ld) {
  for (int i = threadIdx.x; i < kBlock * kD / 8; i += blockDim.x) {
    const int row = i / 8, col = (i % 8) * 8;
    copy_async16(dst + row * kStride + col, src + static_cast<std::size_t>(row) * ld + col);
  }
}

// Head (b, h) = blockIdx.y of a layout: its row 0.
__device__ inline std::size_t head_base(const HeadLayout& l, int NH) {
  const int b = blockIdx.y / NH, h = blockIdx.y % NH;
  return static_cast<std::size_t>(b) * l.batch + static_cast<std::size_t>(h) * l.head;
}
// 64 floats (one per row of a tile).
__device__ inline void load_row_values(float* dst, const float* src) {
  if (threadIdx.x < kBlock / 4) copy_async16(dst + threadIdx.x * 4, src + threadIdx.x * 4);
}

constexpr int kTile = kBlock * kStride;  // bf16 elements of one shared-memory tile

// Key blocks stream through two buffers: starts loading block kb+1 (if kb < last) into the
// other buffer, then waits until block kb has arrived. k and v point at the head's row 0.
__device__ inline void stream_kv(bf16* skv, const bf16* k, const bf16* v, std::size_t tile, int ld, int kb,
                                 int last) {
  if (kb < last) {
    bf16* next = skv + ((kb + 1) % 2) * 2 * kTile;
    load_tile(next, k + (kb + 1) * tile, ld);
    load_tile(next + kTile, v + (kb + 1) * tile, ld);
    commit();
    wait<1>();
  } else {
    wait<0>();
  }
  __syncthreads();
}

// Dynamic shared memory beyond 48 KB must be allowed per kernel, once.
template <typename Kernel>
void allow_shared(Kernel kernel, int bytes) {
  if (bytes > 48 * 1024) {
    const cudaError_t rc = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    require(rc == cudaSuccess, "flash attention: the device cannot give the kernels their shared memory");
  }
}

// M tiles of 16 rows: a warp's A operands (M x 16 rows x 64, as 4 k-steps of 16 each) and
// accumulators (M x 16 rows x 64 columns, as 8 m16n8 fragments each).
template <int M>
using Operand = uint32_t[M][4][4];
template <int M>
using Accumulator = float[M][8][4];

// The A operands of rows [16 * first, 16 * (first + M)) of a tile.
template <int M>
__device__ inline void load_a(Operand<M>& a, const bf16* tile, int first, int lane) {
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
      ldmatrix_x4(a[i][ks], tile + ((first + i) * 16 + lane % 16) * kStride + ks * 16 + (lane / 16) * 8);
}

// acc (M x 16 x 64) += a (M x 16 x 64) * tile^T: the tile's rows are the output columns (x k^T).
template <int M>
__device__ inline void mma_abt(Accumulator<M>& acc, const Operand<M>& a, const bf16* tile, int lane) {
#pragma unroll
  for (int n2 = 0; n2 < 4; ++n2)
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      uint32_t b[4];
      ldmatrix_x4(b, tile + (n2 * 16 + (lane / 16) * 8 + lane % 8) * kStride + ks * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
      for (int i = 0; i < M; ++i) {
        mma(acc[i][2 * n2], a[i][ks], b[0], b[1]);
        mma(acc[i][2 * n2 + 1], a[i][ks], b[2], b[3]);
      }
    }
}

// acc (M x 16 x 64) += p (M x 16 x 64, accumulators turned A operands) * tile: the tile's
// rows are the inner dimension (x v).
template <int M>
__device__ inline void mma_pb(Accumulator<M>& acc, const Accumulator<M>& p, const bf16* tile, int lane) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    uint32_t a[M][4];
#pragma unroll
    for (int i = 0; i < M; ++i) {
      a[i][0] = pack(p[i][2 * kk][0], p[i][2 * kk][1]);
      a[i][1] = pack(p[i][2 * kk][2], p[i][2 * kk][3]);
      a[i][2] = pack(p[i][2 * kk + 1][0], p[i][2 * kk + 1][1]);
      a[i][3] = pack(p[i][2 * kk + 1][2], p[i][2 * kk + 1][3]);
    }
#pragma unroll
    for (int d2 = 0; d2 < 4; ++d2) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, tile + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * kStride + d2 * 16 + (lane / 16) * 8);
#pragma unroll
      for (int i = 0; i < M; ++i) {
        mma(acc[i][2 * d2], a[i], b[0], b[1]);
        mma(acc[i][2 * d2 + 1], a[i], b[2], b[3]);
      }
    }
  }
}

template <int M>
__device__ inline void zero(Accumulator<M>& acc) {
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (auto& f : acc[i])
#pragma unroll
      for (float& x : f) x = 0.f;
}

// Rows g and g+8 of a warp's 16 x 64 accumulator, scaled, to a head's rows `ld` elements apart.
__device__ inline void store_rows(bf16* dst, int ld, const float (&acc)[8][4], int row0, float s0, float s1, int t) {
  bf16* r0 = dst + static_cast<std::size_t>(row0) * ld;
  bf16* r1 = dst + static_cast<std::size_t>(row0 + 8) * ld;
  for (int n = 0; n < 8; ++n) {
    const int col = n * 8 + 2 * t;
    *reinterpret_cast<__nv_bfloat162*>(r0 + col) = __floats2bfloat162_rn(acc[n][0] * s0, acc[n][1] * s0);
    *reinterpret_cast<__nv_bfloat162*>(r1 + col) = __floats2bfloat162_rn(acc[n][2] * s1, acc[n][3] * s1);
  }
}

// Shared memory: q, then k and v twice (the tile in use and the next one).
constexpr int kForwardShared = 5 * kTile * static_cast<int>(sizeof(bf16));

// online_softmax: src/train/kernels/online_softmax.cuh (shared with fsdp-lora).
using train::tc::online_softmax;

// Causal mask of a diagonal block, for a thread's rows r0 and r0 + 8 (counted from the
// block's first row) and its columns of a 16 x 64 accumulator. kAfterRow: the columns after
// the row get `value` (queries x keys: keys the query does not see); else the columns before
// it (keys x queries: queries that do not see the key).
template <bool kAfterRow>
__device__ inline void mask_diagonal(float (&s)[8][4], int r0, int t, float value) {
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int col = n * 8 + 2 * t + j;
      if (kAfterRow ? col > r0 : col < r0) s[n][j] = value;
      if (kAfterRow ? col > r0 + 8 : col < r0 + 8) s[n][2 + j] = value;
    }
}

__global__ void __launch_bounds__(kForwardThreads) flash_forward_kernel(bf16* o, HeadLayout lo, float* lse,
                                                                        const bf16* q, const bf16* k, const bf16* v,
                                                                        HeadLayout li, int NH, int T,
                                                                        float scale_log2) {
  constexpr int M = kForwardTiles;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sq = reinterpret_cast<bf16*>(smem);
  bf16* skv = sq + kTile;  // [buffer][k, v]
  const int qb = gridDim.x - 1 - blockIdx.x;  // the longest rows first: better tail balance
  const std::size_t head = head_base(li, NH);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // This thread's rows, counted from the block's first: tile i holds r + 16 i and r + 16 i + 8.
  const int r = warp * 16 * M + g;
  const std::size_t tile = static_cast<std::size_t>(kBlock) * li.row;  // elements from one block of rows to the next

  load_tile(sq, q + head + qb * tile, li.row);
  load_tile(skv, k + head, li.row);
  load_tile(skv + kTile, v + head, li.row);
  commit();

  Operand<M> qa;
  Accumulator<M> acc, s;
  zero<M>(acc);
  float m[M][2], l[M][2];  // per tile and row: running max (log2 units) and this thread's sum
#pragma unroll
  for (int i = 0; i < M; ++i) m[i][0] = m[i][1] = -INFINITY, l[i][0] = l[i][1] = 0.f;
  for (int kb = 0; kb <= qb; ++kb) {
    const bf16* sk = skv + (kb % 2) * 2 * kTile;
    const bf16* sv = sk + kTile;
    stream_kv(skv, k + head, v + head, tile, li.row, kb, qb);  // the other buffer is free since the last step
    if (kb == 0) load_a<M>(qa, sq, warp * M, lane);
    zero<M>(s);
    mma_abt<M>(s, qa, sk, lane);  // s = q k^T
#pragma unroll
    for (int i = 0; i < M; ++i) {
      if (kb == qb) mask_diagonal<true>(s[i], r + 16 * i, t, -INFINITY);
      online_softmax(s[i], acc[i], m[i][0], m[i][1], l[i][0], l[i][1], scale_log2);
    }
    mma_pb<M>(acc, s, sv, lane);  // o += p v
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  float* L = lse + static_cast<std::size_t>(blockIdx.y) * T;
#pragma unroll
  for (int i = 0; i < M; ++i) {
    float sum[2] = {l[i][0], l[i][1]};
    for (float& x : sum) {
      x += __shfl_xor_sync(0xffffffffu, x, 1);
      x += __shfl_xor_sync(0xffffffffu, x, 2);
    }
    const int row0 = qb * kBlock + r + 16 * i;
    store_rows(o + head_base(lo, NH), lo.row, acc[i], row0, 1.f / sum[0], 1.f / sum[1], t);
    if (t == 0) {
      // lse in natural units of the scaled scores: ln(sum e^z) = (m + log2 l) / log2 e.
      L[row0] = (m[i][0] + log2f(sum[0])) / kLog2e;
      L[row0 + 8] = (m[i][1] + log2f(sum[1])) / kLog2e;
    }
  }
}

// dK and dV for one block of 64 keys (4 warps x 16 keys), over the query blocks that see it.
// Shared memory: k, v, then q, dO, lse and delta twice (in use, next).
constexpr int kRowValues = 2 * kBlock;  // floats: lse and delta of one query block
constexpr int kDkdvShared =
    (2 * kTile + 2 * 2 * kTile) * static_cast<int>(sizeof(bf16)) + 2 * kRowValues * static_cast<int>(sizeof(float));

__global__ void __launch_bounds__(kThreads, 3) flash_backward_dkdv_kernel(bf16* dk, bf16* dv, HeadLayout lg,
                                                                          const bf16* q, const bf16* k,
                                                                          const bf16* v, HeadLayout li,
                                                                          const bf16* dout, HeadLayout lo,
                                                                          const float* lse, const float* delta,
                                                                          int NH, int T, float scale,
                                                                          float scale_log2) {
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sk = reinterpret_cast<bf16*>(smem);
  bf16* sv = sk + kTile;
  bf16* sqdo = sv + kTile;                                    // [buffer][q, dO]
  float* srow = reinterpret_cast<float*>(sqdo + 4 * kTile);  // [buffer][lse * log2e... as loaded, delta]
  const int kb = blockIdx.x;
  const std::size_t head = head_base(li, NH), ohead = head_base(lo, NH);
  const std::size_t tile = static_cast<std::size_t>(kBlock) * li.row, otile = static_cast<std::size_t>(kBlock) * lo.row;
  const float* L = lse + static_cast<std::size_t>(blockIdx.y) * T;
  const float* D = delta + static_cast<std::size_t>(blockIdx.y) * T;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int key0 = kb * kBlock + warp * 16 + g;  // this thread's keys: key0 and key0 + 8
  const int blocks = T / kBlock;

  auto load_query_block = [&](int qb, int buf) {
    bf16* dst = sqdo + buf * 2 * kTile;
    load_tile(dst, q + head + qb * tile, li.row);
    load_tile(dst + kTile, dout + ohead + qb * otile, lo.row);
    load_row_values(srow + buf * kRowValues, L + qb * kBlock);
    load_row_values(srow + buf * kRowValues + kBlock, D + qb * kBlock);
    commit();
  };
  load_tile(sk, k + head + kb * tile, li.row);
  load_tile(sv, v + head + kb * tile, li.row);
  load_query_block(kb, 0);  // one group with k and v

  Accumulator<1> dk_acc, dv_acc, p, dp;
  zero<1>(dk_acc);
  zero<1>(dv_acc);
  const int r = warp * 16 + g;  // this thread's keys, counted from the block's first: r and r + 8
  for (int qb = kb; qb < blocks; ++qb) {
    const int buf = (qb - kb) % 2;
    if (qb + 1 < blocks) {
      load_query_block(qb + 1, 1 - buf);
      wait<1>();
    } else {
      wait<0>();
    }
    __syncthreads();
    const bf16* sq = sqdo + buf * 2 * kTile;
    const bf16* sdo = sq + kTile;
    const float* sl = srow + buf * kRowValues;
    const float* sd = sl + kBlock;
    // P^T (16 keys x 64 queries) = exp(k q^T * scale - lse[query]), 0 where query < key. The
    // warp's k and v rows are read from shared memory at each use (not held in registers),
    // which leaves room for three blocks per multiprocessor (168 registers, no spills).
    Operand<1> a;
    load_a<1>(a, sk, warp, lane);
    zero<1>(p);
    mma_abt<1>(p, a, sq, lane);
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int col = n * 8 + 2 * t + j;
        const float l2 = sl[col] * kLog2e;
        p[0][n][j] = exp2f(fmaf(p[0][n][j], scale_log2, -l2));
        p[0][n][2 + j] = exp2f(fmaf(p[0][n][2 + j], scale_log2, -l2));
      }
    if (qb == kb) mask_diagonal<false>(p[0], r, t, 0.f);
    mma_pb<1>(dv_acc, p, sdo, lane);  // dV += P^T dO
    // dP^T (16 keys x 64 queries) = v dO^T;  dS^T = P^T (dP^T - delta[query])
    load_a<1>(a, sv, warp, lane);
    zero<1>(dp);
    mma_abt<1>(dp, a, sdo, lane);
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int col = n * 8 + 2 * t + j;
        dp[0][n][j] = p[0][n][j] * (dp[0][n][j] - sd[col]);
        dp[0][n][2 + j] = p[0][n][2 + j] * (dp[0][n][2 + j] - sd[col]);
      }
    mma_pb<1>(dk_acc, dp, sq, lane);  // dK += dS^T Q
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  const std::size_t ghead = head_base(lg, NH);
  store_rows(dk + ghead, lg.row, dk_acc[0], key0, scale, scale, t);
  store_rows(dv + ghead, lg.row, dv_acc[0], key0, 1.f, 1.f, t);
}

// dQ for one block of 64 queries (4 warps x 16 queries), over the key blocks it sees.
// Shared memory: q, dO, then k and v twice (in use, next).
constexpr int kDqShared = 6 * kTile * static_cast<int>(sizeof(bf16));

__global__ void __launch_bounds__(kThreads) flash_backward_dq_kernel(bf16* dq, HeadLayout lg, const bf16* q,
                                                                     const bf16* k, const bf16* v, HeadLayout li,
                                                                     const bf16* dout, HeadLayout lo, const float* lse,
                                                                     const float* delta, int NH, int T, float scale,
                                                                     float scale_log2) {
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* sq = reinterpret_cast<bf16*>(smem);
  bf16* sdo = sq + kTile;
  bf16* skv = sdo + kTile;  // [buffer][k, v]
  const int qb = gridDim.x - 1 - blockIdx.x;
  const std::size_t head = head_base(li, NH);
  const std::size_t tile = static_cast<std::size_t>(kBlock) * li.row;
  const float* L = lse + static_cast<std::size_t>(blockIdx.y) * T;
  const float* D = delta + static_cast<std::size_t>(blockIdx.y) * T;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int row0 = qb * kBlock + warp * 16 + g;

  load_tile(sq, q + head + qb * tile, li.row);
  load_tile(sdo, dout + head_base(lo, NH) + qb * static_cast<std::size_t>(kBlock) * lo.row, lo.row);
  load_tile(skv, k + head, li.row);
  load_tile(skv + kTile, v + head, li.row);
  commit();
  const float l0 = L[row0] * kLog2e, l1 = L[row0 + 8] * kLog2e, d0 = D[row0], d1 = D[row0 + 8];

  Operand<1> qa, doa;
  Accumulator<1> dq_acc, p, dp;
  zero<1>(dq_acc);
  for (int kb = 0; kb <= qb; ++kb) {
    const bf16* sk = skv + (kb % 2) * 2 * kTile;
    const bf16* sv = sk + kTile;
    stream_kv(skv, k + head, v + head, tile, li.row, kb, qb);
    if (kb == 0) {
      load_a<1>(qa, sq, warp, lane);
      load_a<1>(doa, sdo, warp, lane);
    }
    zero<1>(p);
    mma_abt<1>(p, qa, sk, lane);  // q k^T
    zero<1>(dp);
    mma_abt<1>(dp, doa, sv, lane);  // dO v^T
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        p[0][n][j] = exp2f(fmaf(p[0][n][j], scale_log2, -l0));
        p[0][n][2 + j] = exp2f(fmaf(p[0][n][2 + j], scale_log2, -l1));
      }
    if (kb == qb) mask_diagonal<true>(p[0], warp * 16 + g, t, 0.f);
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        dp[0][n][j] = p[0][n][j] * (dp[0][n][j] - d0);  // dS
        dp[0][n][2 + j] = p[0][n][2 + j] * (dp[0][n][2 + j] - d1);
      }
    mma_pb<1>(dq_acc, dp, sk, lane);  // dQ += dS k
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }
  store_rows(dq + head_base(lg, NH), lg.row, dq_acc[0], row0, scale, scale, t);
}


void check_shape(const char* what, int BH, int T, int HS) {
  require(HS == kD, "flash attention: the head size must be 64");
  require(BH > 0 && T > 0 && T % kBlock == 0, "flash attention: T must be a positive multiple of 64");
  (void)what;
}

}  // namespace

bool flash_attention_supported(int T, int HS) { return HS == kD && T > 0 && T % kBlock == 0; }

HeadLayout HeadLayout::contiguous(int NH, int T) {
  return {static_cast<long long>(NH) * T * kD, static_cast<long long>(T) * kD, kD};
}
HeadLayout HeadLayout::interleaved(int T, int row) {
  return {static_cast<long long>(T) * row, kD, row};
}

void flash_attention_forward(bf16* out, HeadLayout out_layout, float* lse, const bf16* q, const bf16* k, const bf16* v,
                             HeadLayout in_layout, int B, int NH, int T, int HS, float scale, cudaStream_t stream) {
  check_shape("forward", B * NH, T, HS);
  static const bool allowed = (allow_shared(flash_forward_kernel, kForwardShared), true);
  (void)allowed;
  flash_forward_kernel<<<dim3(T / kBlock, B * NH), kForwardThreads, kForwardShared, stream>>>(
      out, out_layout, lse, q, k, v, in_layout, NH, T, scale * kLog2e);
  check_launch("flash_attention_forward");
}

void attention_delta(float* delta, const bf16* dout, const bf16* out, int B, int T, int NH, int HS,
                     cudaStream_t stream) {
  require(HS == kD, "attention_delta: the head size must be 64");
  require(aligned16(dout) && aligned16(out), "attention_delta: dout and out must be 16-byte aligned");
  // delta = rowsum(dout o out): src/train/kernels/attention_delta.cuh, shared with fsdp-lora.
  train::detail::launch_attention_delta<kD>(delta, dout, out, B, T, NH, stream);
  check_launch("attention_delta");
}

void flash_attention_backward(bf16* dq, bf16* dk, bf16* dv, HeadLayout grad_layout, const bf16* q, const bf16* k,
                              const bf16* v, HeadLayout in_layout, const bf16* dout, HeadLayout out_layout,
                              const float* lse, const float* delta, int B, int NH, int T, int HS, float scale,
                              cudaStream_t stream) {
  check_shape("backward", B * NH, T, HS);
  static const bool allowed = (allow_shared(flash_backward_dkdv_kernel, kDkdvShared),
                               allow_shared(flash_backward_dq_kernel, kDqShared), true);
  (void)allowed;
  const dim3 grid(T / kBlock, B * NH);
  flash_backward_dkdv_kernel<<<grid, kThreads, kDkdvShared, stream>>>(dk, dv, grad_layout, q, k, v, in_layout, dout,
                                                                      out_layout, lse, delta, NH, T, scale,
                                                                      scale * kLog2e);
  check_launch("flash_attention_backward (dk, dv)");
  flash_backward_dq_kernel<<<grid, kThreads, kDqShared, stream>>>(dq, grad_layout, q, k, v, in_layout, dout,
                                                                  out_layout, lse, delta, NH, T, scale,
                                                                  scale * kLog2e);
  check_launch("flash_attention_backward (dq)");
}

}  // namespace gpuaccept::ddp::gpu
