// Hopper's warpgroup matrix multiply (wgmma, PTX ISA 8.0, sm_90a only): one warpgroup (four
// warps, 128 threads) multiplies a 64-row A by a B read straight from shared memory through a
// matrix descriptor, asynchronously, without ldmatrix. tensor_core.cuh's mma.sync needs every
// operand in registers first; on an H100 that ldmatrix traffic bounded the attention backward
// (83% shared-memory throughput, tensor pipe 34%: docs/performance.md), and wgmma-probe measured
// 972 TFLOP/s for m64n64k16 from shared memory against 625 for mma.sync on ldmatrix fragments.
//
//   descriptor            start address, leading/stride byte offsets, swizzle mode
//   fence / commit /      wgmma.fence before products that read registers this thread wrote;
//   wait<n>               commit closes a group of products; wait<n> leaves at most n in flight
//   fence_async_shared    this thread's shared-memory writes made visible to wgmma's reads
//   mma_m64n64k16_ss      d (64 x 64) (+)= A B, both operands from shared memory
//   mma_m64n64k16_rs      d (64 x 64) += A B, A from registers, B from shared memory
//   mma_m64n128k16_ss     d (64 x 128) += A B, both from shared memory (either transposed)
//   mma_m64n128k16_rs     d (64 x 128) += A B, A from registers, B from shared memory
//   mma_ss<N>, mma_rs<N>  the same chosen by N (64 or 128), for kernels templated on the head size
//
// Accumulators: thread (warp w, lane l) of the warpgroup holds rows 16w + l/4 and +8, and for each
// 8-column block j the columns 8j + 2(l%4), +1: d[4j + e] at row +8(e/2), column +e%2 -- per
// warp the places mma.sync's m16n8 accumulator has, so the same packing turns an accumulator
// into a register A operand: k-step kk's a[0..3] = pack(d[8kk..8kk+1]), pack(d[8kk+2..3]),
// pack(d[8kk+4..5]), pack(d[8kk+6..7]).
//
// The one shared-memory layout used here (wgmma-probe checks it against a CPU loop, K-major and
// N-major): a tile of 64 rows x 128 bf16 columns as two 64-column halves (8 KB each; a tile of
// 64 columns, a head of 64, is one half) of 64 rows of 128 bytes, 16-byte chunk c of row r
// stored at chunk c ^ (r % 8) (the 128-byte swizzle, which spreads ldmatrix-free reads of 8 rows
// over every bank). Its base must be 1024-byte aligned. Read K-major (the columns are the reduction: Q K^T) or N-major (the rows
// are the reduction: P V).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>

#include "train/kernels/tensor_core.cuh"

namespace gpuaccept::train::wgmma {

__device__ inline std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// PTX ISA "Matrix Descriptor Format": start address, leading and stride byte offsets (each >> 4,
// 14 bits), base offset 0, the swizzle mode in bits 62-63 (0 none, 1 128-byte, 2 64, 3 32).
__device__ inline std::uint64_t descriptor(std::uint32_t addr, std::uint32_t lbo, std::uint32_t sbo, int swizzle) {
  return (static_cast<std::uint64_t>(addr >> 4) & 0x3fff) | (static_cast<std::uint64_t>((lbo >> 4) & 0x3fff) << 16) |
         (static_cast<std::uint64_t>((sbo >> 4) & 0x3fff) << 32) | (static_cast<std::uint64_t>(swizzle) << 62);
}

__device__ inline void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ inline void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Writes through the generic proxy (stores, cp.async) before reads through the async proxy
// (wgmma); a barrier after it makes every thread's writes visible.
__device__ inline void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// ---- the swizzled 64 x 128 tile ------------------------------------------------------------
// Dynamic shared memory rounded up to the 1024 bytes the 128-byte swizzle's pattern spans (a
// kernel asks for kSmemAlign bytes more than it uses).
inline constexpr int kSmemAlign = 1024;
__device__ inline unsigned char* aligned_smem(unsigned char* raw) {
  return reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(raw) + kSmemAlign - 1) &
                                          ~static_cast<std::uintptr_t>(kSmemAlign - 1));
}

inline constexpr int kTileRows = 64;
inline constexpr int kTileCols = 128;
inline constexpr int kTileBytes = kTileRows * kTileCols * 2;  // 16 KB
inline constexpr int kHalfBytes = kTileBytes / 2;             // one 64-column half

// Rows `ld` elements apart from `src` into a 64 x kCols tile at `dst` (kCols 128: both halves;
// 64: one half, a head of 64), cp.async (the caller commits), by the kThreads threads of the
// block. Thread x copies chunk x % (kCols/8) of rows x / (kCols/8) + n kThreads/(kCols/8): whole
// 8-row groups a pass, so its swizzled place moves by a constant and no pass divides.
template <int kCols = kTileCols, int kThreads = 128>
__device__ inline void load_tile(unsigned char* dst, const __nv_bfloat16* src, std::size_t ld) {
  static_assert(kCols == 64 || kCols == 128, "one or two 64-column halves");
  constexpr int kChunks = kCols / 8, kRowsPerPass = kThreads / kChunks;
  static_assert(kRowsPerPass % 8 == 0, "whole 8-row groups a pass");
  const int c = static_cast<int>(threadIdx.x) % kChunks, r = static_cast<int>(threadIdx.x) / kChunks;
  unsigned char* d = dst + (c / 8) * kHalfBytes + r * 128 + ((c % 8) ^ (r % 8)) * 16;
  const __nv_bfloat16* s = src + r * ld + c * 8;
#pragma unroll
  for (int n = 0; n < kTileRows / kRowsPerPass; ++n)
    tc::copy_async16(d + n * kRowsPerPass * 128, s + n * kRowsPerPass * ld);
}
// Bytes of a 64 x kCols tile.
template <int kCols>
inline constexpr int kTileBytesOf = kTileRows * kCols * 2;
// The tile read K-major at k-step s (columns 16s .. 16s + 15): the hardware applies the XOR, so
// a step inside a half moves the start by 32 bytes; SBO 1024 is the next 8 rows.
__device__ inline std::uint64_t desc_k_major(const unsigned char* tile, int s) {
  return descriptor(smem_addr(tile) + (s / 4) * kHalfBytes + (s % 4) * 32, 16, 1024, 1);
}
// The tile read N-major at k-step s (rows 16s .. 16s + 15): LBO 8 KB is the next 64 columns,
// SBO 1024 the next 8 rows. The same descriptor reads one 64-column half as an M-major A
// (mma_m64n128k16_ss<1, ...>: the attention's dQ = dS K from staged dS^T tiles).
__device__ inline std::uint64_t desc_n_major(const unsigned char* tile, int s) {
  return descriptor(smem_addr(tile) + s * 2048, kHalfBytes, 1024, 1);
}

// ---- the products --------------------------------------------------------------------------

// The accumulator operands of one product: the asm text "{%0, ..., %N-1}, " and the constraint
// list binding d[0..N-1] to them (in and out), written once for every product below.
#define GPUACCEPT_WGMMA_D32(d)                                                                       \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),    \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),       \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),     \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),     \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define GPUACCEPT_WGMMA_D64(d)                                                                       \
  GPUACCEPT_WGMMA_D32(d), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),     \
      "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),     \
      "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),     \
      "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]),     \
      "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define GPUACCEPT_WGMMA_D32_TEXT                                                                     \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                          \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
#define GPUACCEPT_WGMMA_D64_TEXT                                                                     \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                          \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "

// d (64 x 64, 32 a thread) = A B^T (+ d where `accumulate`) for one k-step of 16; kTransB: B's
// descriptor is N-major; kTransA: A's is M-major (its rows are the reduction).
template <int kTransB = 0, int kTransA = 0>
__device__ inline void mma_m64n64k16_ss(float (&d)[32], std::uint64_t a, std::uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      GPUACCEPT_WGMMA_D32_TEXT
      "%32, %33, p, 1, 1, %36, %35;\n}\n"
      : GPUACCEPT_WGMMA_D32(d)
      : "l"(a), "l"(b), "r"(accumulate), "n"(kTransB), "n"(kTransA));
}

// d (64 x 64, 32 a thread) += A B for one k-step of 16: a the thread's A fragment (four bf16
// pairs, the packing above), B's descriptor N-major (kTransB 1) or K-major (0).
template <int kTransB = 1>
__device__ inline void mma_m64n64k16_rs(float (&d)[32], const std::uint32_t* a, std::uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"  // scale-d is a predicate: always accumulate
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      GPUACCEPT_WGMMA_D32_TEXT
      "{%32, %33, %34, %35}, %36, p, 1, 1, %37;\n}\n"
      : GPUACCEPT_WGMMA_D32(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(kTransB));
}

// d (64 x 128, 64 a thread) += A B for one k-step of 16, both operands from shared memory:
// kTransA 1 reads A M-major (its rows are the reduction, as desc_n_major reads a tile), kTransB
// 1 reads B N-major.
template <int kTransA, int kTransB>
__device__ inline void mma_m64n128k16_ss(float (&d)[64], std::uint64_t a, std::uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"  // scale-d is a predicate: always accumulate
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      GPUACCEPT_WGMMA_D64_TEXT
      "%64, %65, p, 1, 1, %66, %67;\n}\n"
      : GPUACCEPT_WGMMA_D64(d)
      : "l"(a), "l"(b), "n"(kTransA), "n"(kTransB));
}

// d (64 x 128, 64 a thread) += A B for one k-step of 16: a the thread's A fragment (four bf16
// pairs, the packing above), B's descriptor N-major (kTransB 1) or K-major (0).
template <int kTransB = 1>
__device__ inline void mma_m64n128k16_rs(float (&d)[64], const std::uint32_t* a, std::uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"  // scale-d is a predicate: always accumulate
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      GPUACCEPT_WGMMA_D64_TEXT
      "{%64, %65, %66, %67}, %68, p, 1, 1, %69;\n}\n"
      : GPUACCEPT_WGMMA_D64(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(kTransB));
}

// The products above by their N (64 or 128: the head size of the attention's P V, dS K, P^T dO
// and dS^T Q), so that one kernel template serves both: d (64 x N, N/2 a thread) += A B for one
// k-step of 16.
template <int N, int kTransA, int kTransB>
__device__ inline void mma_ss(float (&d)[N / 2], std::uint64_t a, std::uint64_t b) {
  if constexpr (N == 64)
    mma_m64n64k16_ss<kTransB, kTransA>(d, a, b, 1);
  else
    mma_m64n128k16_ss<kTransA, kTransB>(d, a, b);
}
template <int N, int kTransB = 1>
__device__ inline void mma_rs(float (&d)[N / 2], const std::uint32_t* a, std::uint64_t b) {
  if constexpr (N == 64)
    mma_m64n64k16_rs<kTransB>(d, a, b);
  else
    mma_m64n128k16_rs<kTransB>(d, a, b);
}

}  // namespace gpuaccept::train::wgmma
