// wgmma_attention_probe: a prototype of the causal grouped-query attention forward with
// Hopper's wgmma (docs/performance.md, "Why our attention kernels are slower than cuDNN's"),
// beside the phase's own forward (gpu/kernels/flash_attention_forward.cu), before any of it
// goes into the phase. Same math as ours (FlashAttention-2's online softmax, kernels.h):
//
//   per (b, h) and block of 64 queries, one warpgroup (128 threads), over key blocks 0..own:
//     S (64 x 64)   = Q K^T          wgmma m64n64k16, Q and K from shared memory (K-major)
//     online softmax on S in registers (rows 16 w + lane/4 and +8 of each warp w)
//     O (64 x 128) += P V            wgmma m64n128k16, P from registers (the S accumulators
//                                    packed to bf16: the same places an A operand wants),
//                                    V from shared memory N-major (trans-b)
//   y = O / l, lse = m + log l, as ours.
//
// Shared memory: Q, then K and V twice (in use, next; cp.async), every 64 x 128 tile as two
// 64 x 64 halves of rows of 128 bytes with the 128-byte swizzle (16-byte chunk c of row r at
// c ^ (r % 8)): wgmma_probe.cu's "swizzle128" (Q, K) and "swizzle128, B N-major" (V) layouts,
// which that probe checks first. Not tuned: the products wait for themselves (no overlap of
// softmax and wgmma, no producer warp, no TMA); the point is a correct base to build on.
//
//   build/bin/wgmma-attention-probe      (sm_90a)
// 1. B 1, T 256, 4 query heads on 2 key/value heads, against a float64 CPU loop (y, lse);
// 2. B 2, T 4096, 28 on 4 heads (Qwen2-7B's), against the phase's flash_attention_forward
//    (variant 1), both timed. Prints PASS/FAIL lines and the two times.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fsdp-lora/gpu/kernels.h"
#include "wgmma.cuh"

namespace {

using bf16 = __nv_bfloat16;
constexpr int kD = 128;                 // head size
constexpr int kBlock = 64;              // queries per CTA, keys per block
constexpr int kTileBytes = kBlock * kD * 2;  // 16 KB: one 64 x 128 bf16 tile
constexpr int kHalfBytes = kTileBytes / 2;   // 8 KB: its 64 x 64 half
constexpr int kShared = 5 * kTileBytes + 1024;  // Q, K x 2, V x 2, and room to align to 1024
constexpr float kLog2e = 1.4426950408889634f;

// ---- primitives -----------------------------------------------------------------------------

namespace wg = gpuaccept::probes::wgmma;
using wg::fence_async_shared;
using wg::smem_addr;
__device__ inline void copy_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
}
__device__ inline void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ inline void wait_groups() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// A 64 x 128 tile (rows `ld` elements apart) into `dst` in the swizzled layout: element (r, d)
// at (d / 64) * 8 KB + r * 128 + ((d % 64 / 8) ^ (r % 8)) * 16 + (d % 8) * 2 bytes.
__device__ inline void load_tile(unsigned char* dst, const bf16* src, std::size_t ld) {
  for (int i = threadIdx.x; i < kBlock * kD / 8; i += blockDim.x) {
    const int r = i / (kD / 8), c = i % (kD / 8);  // 16 chunks of 8 a row
    copy_async16(dst + (c / 8) * kHalfBytes + r * 128 + ((c % 8) ^ (r % 8)) * 16, src + r * ld + c * 8);
  }
}

__device__ inline std::uint64_t desc(std::uint32_t addr, std::uint32_t lbo, std::uint32_t sbo) {
  return wg::descriptor(addr, lbo, sbo, /*swizzle=*/1);  // 128-byte swizzle
}
// Q or K (K-major: the head channels are the reduction) for k-step s of 16 channels.
__device__ inline std::uint64_t desc_k_major(const unsigned char* tile, int s) {
  return desc(smem_addr(tile) + (s / 4) * kHalfBytes + (s % 4) * 32, 16, 1024);
}
// V (N-major: the keys are the reduction, the channels contiguous) for k-step s of 16 keys.
__device__ inline std::uint64_t desc_n_major(const unsigned char* tile, int s) {
  return desc(smem_addr(tile) + s * 2048, kHalfBytes, 1024);
}

// s (the thread's 32 accumulators of S, 64 x 64) = Q K^T over the 128 channels.
__device__ inline void wgmma_qk(float (&s)[32], const unsigned char* q, const unsigned char* k) {
#pragma unroll
  for (int step = 0; step < kD / 16; ++step) {
    const std::uint64_t a = desc_k_major(q, step), b = desc_k_major(k, step);
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(s[0]), "+f"(s[1]), "+f"(s[2]), "+f"(s[3]), "+f"(s[4]), "+f"(s[5]), "+f"(s[6]), "+f"(s[7]),
          "+f"(s[8]), "+f"(s[9]), "+f"(s[10]), "+f"(s[11]), "+f"(s[12]), "+f"(s[13]), "+f"(s[14]), "+f"(s[15]),
          "+f"(s[16]), "+f"(s[17]), "+f"(s[18]), "+f"(s[19]), "+f"(s[20]), "+f"(s[21]), "+f"(s[22]), "+f"(s[23]),
          "+f"(s[24]), "+f"(s[25]), "+f"(s[26]), "+f"(s[27]), "+f"(s[28]), "+f"(s[29]), "+f"(s[30]), "+f"(s[31])
        : "l"(a), "l"(b), "r"(step));
  }
}

__device__ inline std::uint32_t pack(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

// o (64 accumulators of O, 64 x 128) += P V, P the softmax of S in s (keys 16 kk .. + 15 are
// S's 8-column blocks 2 kk and 2 kk + 1).
__device__ inline void wgmma_pv(float (&o)[64], const float (&p)[32], const unsigned char* v) {
#pragma unroll
  for (int kk = 0; kk < kBlock / 16; ++kk) {
    const std::uint32_t a0 = pack(p[8 * kk + 0], p[8 * kk + 1]), a1 = pack(p[8 * kk + 2], p[8 * kk + 3]);
    const std::uint32_t a2 = pack(p[8 * kk + 4], p[8 * kk + 5]), a3 = pack(p[8 * kk + 6], p[8 * kk + 7]);
    const std::uint64_t b = desc_n_major(v, kk);
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : "+f"(o[0]), "+f"(o[1]), "+f"(o[2]), "+f"(o[3]), "+f"(o[4]), "+f"(o[5]), "+f"(o[6]), "+f"(o[7]),
          "+f"(o[8]), "+f"(o[9]), "+f"(o[10]), "+f"(o[11]), "+f"(o[12]), "+f"(o[13]), "+f"(o[14]), "+f"(o[15]),
          "+f"(o[16]), "+f"(o[17]), "+f"(o[18]), "+f"(o[19]), "+f"(o[20]), "+f"(o[21]), "+f"(o[22]), "+f"(o[23]),
          "+f"(o[24]), "+f"(o[25]), "+f"(o[26]), "+f"(o[27]), "+f"(o[28]), "+f"(o[29]), "+f"(o[30]), "+f"(o[31]),
          "+f"(o[32]), "+f"(o[33]), "+f"(o[34]), "+f"(o[35]), "+f"(o[36]), "+f"(o[37]), "+f"(o[38]), "+f"(o[39]),
          "+f"(o[40]), "+f"(o[41]), "+f"(o[42]), "+f"(o[43]), "+f"(o[44]), "+f"(o[45]), "+f"(o[46]), "+f"(o[47]),
          "+f"(o[48]), "+f"(o[49]), "+f"(o[50]), "+f"(o[51]), "+f"(o[52]), "+f"(o[53]), "+f"(o[54]), "+f"(o[55]),
          "+f"(o[56]), "+f"(o[57]), "+f"(o[58]), "+f"(o[59]), "+f"(o[60]), "+f"(o[61]), "+f"(o[62]), "+f"(o[63])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(b), "n"(1));  // scale-d: accumulate
  }
}

// ---- the kernel -----------------------------------------------------------------------------
// grid (B*NH, T/64): blockIdx.x = b*NH + h, blockIdx.y the query block from the end (longest
// first). Thread (warp w, lane): rows r0 = 16 w + lane/4 and r0 + 8 of the block; S column
// 8 j + 2 (lane % 4) + e % 2 in s[4 j + e] (row r0 + 8 (e / 2)); O's likewise over 16 blocks.
__global__ void __launch_bounds__(128) wgmma_attention_forward(bf16* y, float* lse, const bf16* q, const bf16* k,
                                                               const bf16* v, int T, int NH, int NKV,
                                                               float scale_log2) {
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) &
                                                         ~static_cast<std::uintptr_t>(1023));
  unsigned char* sq = smem;
  unsigned char* skv = smem + kTileBytes;  // [buffer][k, v]
  const int b = blockIdx.x / NH, h = blockIdx.x % NH, kvh = h / (NH / NKV);
  const int qb = gridDim.y - 1 - blockIdx.y;
  const std::size_t qs = static_cast<std::size_t>(NH) * kD, ks = static_cast<std::size_t>(NKV) * kD;
  const bf16* qh = q + (static_cast<std::size_t>(b) * T * NH + h) * kD;
  const bf16* kh = k + (static_cast<std::size_t>(b) * T * NKV + kvh) * kD;
  const bf16* vh = v + (static_cast<std::size_t>(b) * T * NKV + kvh) * kD;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, t = lane % 4;
  const int r0 = warp * 16 + lane / 4;

  load_tile(sq, qh + static_cast<std::size_t>(qb) * kBlock * qs, qs);
  load_tile(skv, kh, ks);
  load_tile(skv + kTileBytes, vh, ks);
  commit();

  float o[64], s[32];
  for (float& x : o) x = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  for (int kb = 0; kb <= qb; ++kb) {
    if (kb < qb) {  // the other buffer is free since the last block's closing barrier
      unsigned char* next = skv + ((kb + 1) % 2) * 2 * kTileBytes;
      load_tile(next, kh + static_cast<std::size_t>(kb + 1) * kBlock * ks, ks);
      load_tile(next + kTileBytes, vh + static_cast<std::size_t>(kb + 1) * kBlock * ks, ks);
      commit();
      wait_groups<1>();
    } else {
      wait_groups<0>();
    }
    fence_async_shared();  // this thread's cp.async writes, to the proxy wgmma reads through
    __syncthreads();
    const unsigned char* sk = skv + (kb % 2) * 2 * kTileBytes;
    const unsigned char* sv = sk + kTileBytes;

    for (float& x : s) x = 0.f;
    wg::fence();
    wgmma_qk(s, sq, sk);
    wg::commit();
    wg::wait_all();

    if (kb == qb) {  // the diagonal block: keys after the query get -inf
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = r0 + (e / 2) * 8, col = 8 * j + 2 * t + e % 2;
          if (col > row) s[4 * j + e] = -INFINITY;
        }
    }
    // Online softmax (as flash_attention_forward.cu's online_softmax).
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      mx0 = fmaxf(mx0, fmaxf(s[4 * j], s[4 * j + 1]));
      mx1 = fmaxf(mx1, fmaxf(s[4 * j + 2], s[4 * j + 3]));
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    const float n0 = fmaxf(m0, mx0 * scale_log2), n1 = fmaxf(m1, mx1 * scale_log2);
    const float a0 = exp2f(m0 - n0), a1 = exp2f(m1 - n1);
    m0 = n0;
    m1 = n1;
    float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      s[4 * j] = exp2f(fmaf(s[4 * j], scale_log2, -m0));
      s[4 * j + 1] = exp2f(fmaf(s[4 * j + 1], scale_log2, -m0));
      s[4 * j + 2] = exp2f(fmaf(s[4 * j + 2], scale_log2, -m1));
      s[4 * j + 3] = exp2f(fmaf(s[4 * j + 3], scale_log2, -m1));
      sum0 += s[4 * j] + s[4 * j + 1];
      sum1 += s[4 * j + 2] + s[4 * j + 3];
    }
    l0 = l0 * a0 + sum0;
    l1 = l1 * a1 + sum1;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      o[4 * j] *= a0, o[4 * j + 1] *= a0;
      o[4 * j + 2] *= a1, o[4 * j + 3] *= a1;
    }

    wg::fence();  // o and the packed P are written by this thread above
    wgmma_pv(o, s, sv);
    wg::commit();
    wg::wait_all();
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }

  float sum[2] = {l0, l1};
  for (float& x : sum) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    x += __shfl_xor_sync(0xffffffffu, x, 2);
  }
  bf16* yh = y + (static_cast<std::size_t>(b) * T * NH + h) * kD;
  const std::size_t row0 = static_cast<std::size_t>(qb) * kBlock + r0;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int col = 8 * j + 2 * t;
    *reinterpret_cast<__nv_bfloat162*>(yh + row0 * qs + col) =
        __floats2bfloat162_rn(o[4 * j] / sum[0], o[4 * j + 1] / sum[0]);
    *reinterpret_cast<__nv_bfloat162*>(yh + (row0 + 8) * qs + col) =
        __floats2bfloat162_rn(o[4 * j + 2] / sum[1], o[4 * j + 3] / sum[1]);
  }
  if (t == 0) {
    float* lh = lse + static_cast<std::size_t>(blockIdx.x) * T;
    lh[row0] = (m0 + log2f(sum[0])) / kLog2e;
    lh[row0 + 8] = (m1 + log2f(sum[1])) / kLog2e;
  }
}

void launch(bf16* y, float* lse, const bf16* q, const bf16* k, const bf16* v, int B, int T, int NH, int NKV) {
  const float scale_log2 = kLog2e / std::sqrt(static_cast<float>(kD));
  wgmma_attention_forward<<<dim3(B * NH, T / kBlock), 128, kShared>>>(y, lse, q, k, v, T, NH, NKV, scale_log2);
  CK(cudaGetLastError());
}

// ---- host -----------------------------------------------------------------------------------

struct Inputs {
  int B, T, NH, NKV;
  std::vector<bf16> q, k, v;
};

Inputs random_inputs(int B, int T, int NH, int NKV, std::uint64_t seed) {
  Inputs in{B, T, NH, NKV, {}, {}, {}};
  auto uniform = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>((seed >> 40) % 20001) / 10000.f - 1.f;
  };
  in.q.resize(static_cast<std::size_t>(B) * T * NH * kD);
  in.k.resize(static_cast<std::size_t>(B) * T * NKV * kD);
  in.v.resize(in.k.size());
  for (auto* t : {&in.q, &in.k, &in.v})
    for (auto& x : *t) x = __float2bfloat16(2.f * uniform());
  return in;
}

template <typename T>
T* upload(const std::vector<T>& host) {
  T* d = nullptr;
  CK(cudaMalloc(&d, host.size() * sizeof(T)));
  CK(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}
template <typename T>
std::vector<T> download(const T* d, std::size_t n) {
  std::vector<T> host(n);
  CK(cudaMemcpy(host.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

double rel_l2(const std::vector<double>& got, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}
std::vector<double> as_double(const std::vector<bf16>& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = __bfloat162float(v[i]);
  return out;
}

int failures = 0;
void report(const char* what, double err, double tol) {
  const bool pass = std::isfinite(err) && err <= tol;
  failures += pass ? 0 : 1;
  std::printf("wgmma-attention %-52s %.3e (tol %.0e) %s\n", what, err, tol, pass ? "PASS" : "FAIL");
}

// 1. Against float64 at a small shape.
void check_small() {
  const Inputs in = random_inputs(1, 256, 4, 2, 11);
  const int B = in.B, T = in.T, NH = in.NH, NKV = in.NKV;
  bf16 *dq = upload(in.q), *dk = upload(in.k), *dv = upload(in.v), *dy = nullptr;
  float* dl = nullptr;
  CK(cudaMalloc(&dy, in.q.size() * sizeof(bf16)));
  CK(cudaMalloc(&dl, static_cast<std::size_t>(B) * NH * T * sizeof(float)));
  launch(dy, dl, dq, dk, dv, B, T, NH, NKV);
  CK(cudaDeviceSynchronize());
  const std::vector<double> y = as_double(download(dy, in.q.size()));
  const std::vector<float> l = download(dl, static_cast<std::size_t>(B) * NH * T);

  const auto q = as_double(in.q), k = as_double(in.k), v = as_double(in.v);
  std::vector<double> ref_y(y.size()), ref_l(l.size());
  const double scale = 1.0 / std::sqrt(static_cast<double>(kD));
  for (int h = 0; h < NH; ++h) {
    const int g = h / (NH / NKV);
    for (int i = 0; i < T; ++i) {
      std::vector<double> w(static_cast<std::size_t>(i) + 1);
      double mx = -1e300;
      for (int j = 0; j <= i; ++j) {
        double dot = 0;
        for (int d = 0; d < kD; ++d)
          dot += q[(static_cast<std::size_t>(i) * NH + h) * kD + d] * k[(static_cast<std::size_t>(j) * NKV + g) * kD + d];
        w[static_cast<std::size_t>(j)] = dot * scale;
        mx = std::max(mx, dot * scale);
      }
      double sum = 0;
      for (double& x : w) sum += (x = std::exp(x - mx));
      for (int d = 0; d < kD; ++d) {
        double acc = 0;
        for (int j = 0; j <= i; ++j) acc += w[static_cast<std::size_t>(j)] * v[(static_cast<std::size_t>(j) * NKV + g) * kD + d];
        ref_y[(static_cast<std::size_t>(i) * NH + h) * kD + d] = acc / sum;
      }
      ref_l[static_cast<std::size_t>(h) * T + i] = mx + std::log(sum);
    }
  }
  report("y against float64 (B 1, T 256, 4/2 heads), rel L2", rel_l2(y, ref_y), 1e-2);
  double lse_err = 0;
  for (std::size_t i = 0; i < l.size(); ++i) lse_err = std::max(lse_err, std::fabs(l[i] - ref_l[i]));
  report("lse against float64, max abs", lse_err, 1e-3);
  for (void* p : {static_cast<void*>(dq), static_cast<void*>(dk), static_cast<void*>(dv), static_cast<void*>(dy),
                  static_cast<void*>(dl)})
    CK(cudaFree(p));
}

// 2. Against the phase's kernel at Qwen2-7B's shape, both timed.
void compare_7b() {
  const Inputs in = random_inputs(2, 4096, 28, 4, 12);
  const int B = in.B, T = in.T, NH = in.NH, NKV = in.NKV;
  const std::size_t nl = static_cast<std::size_t>(B) * NH * T;
  bf16 *dq = upload(in.q), *dk = upload(in.k), *dv = upload(in.v), *y1 = nullptr, *y2 = nullptr;
  float *l1 = nullptr, *l2 = nullptr;
  CK(cudaMalloc(&y1, in.q.size() * sizeof(bf16)));
  CK(cudaMalloc(&y2, in.q.size() * sizeof(bf16)));
  CK(cudaMalloc(&l1, nl * sizeof(float)));
  CK(cudaMalloc(&l2, nl * sizeof(float)));
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  auto time_ms = [&](auto&& run) {
    std::vector<float> ms;
    for (int rep = 0; rep < 7; ++rep) {
      CK(cudaEventRecord(t0));
      run();
      CK(cudaEventRecord(t1));
      CK(cudaEventSynchronize(t1));
      float x = 0;
      CK(cudaEventElapsedTime(&x, t0, t1));
      if (rep > 1) ms.push_back(x);  // two warm-ups
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  const float ours = time_ms([&] {
    gpuaccept::fsdp::gpu::flash_attention_forward(y1, l1, dq, dk, dv, B, T, NH, NKV, nullptr);
  });
  const float wg = time_ms([&] { launch(y2, l2, dq, dk, dv, B, T, NH, NKV); });
  CK(cudaDeviceSynchronize());
  report("y against the phase's forward (B 2, T 4096, 28/4), rel L2",
         rel_l2(as_double(download(y2, in.q.size())), as_double(download(y1, in.q.size()))), 1e-2);
  const auto a = download(l1, nl), b = download(l2, nl);
  double lse_err = 0;
  for (std::size_t i = 0; i < nl; ++i) lse_err = std::max(lse_err, static_cast<double>(std::fabs(a[i] - b[i])));
  report("lse against the phase's forward, max abs", lse_err, 1e-3);
  const double flops = 4.0 * B * NH * kD * (static_cast<double>(T) * (T + kBlock) / 2);  // causal, by blocks
  std::printf("wgmma-attention time at B 2, T 4096, 28/4 heads: phase's forward %.3f ms (%.0f TFLOP/s), wgmma %.3f "
              "ms (%.0f TFLOP/s)\n",
              ours, flops / (ours * 1e-3) / 1e12, wg, flops / (wg * 1e-3) / 1e12);
  for (void* p : {static_cast<void*>(dq), static_cast<void*>(dk), static_cast<void*>(dv), static_cast<void*>(y1),
                  static_cast<void*>(y2), static_cast<void*>(l1), static_cast<void*>(l2)})
    CK(cudaFree(p));
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("wgmma-attention-probe: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  if (prop.major != 9) {
    std::printf("wgmma-attention-probe: SKIP (wgmma needs compute capability 9.0)\n");
    return 0;
  }
  CK(cudaFuncSetAttribute(wgmma_attention_forward, cudaFuncAttributeMaxDynamicSharedMemorySize, kShared));
  check_small();
  compare_7b();
  std::printf("wgmma-attention-probe: %s (%d failed)\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
