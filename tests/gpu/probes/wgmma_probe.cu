// wgmma_probe: the first step toward a Hopper attention (docs/performance.md, "Why our
// attention kernels are slower than cuDNN's"). Our kernels feed mma.sync from registers
// loaded by ldmatrix, and the dK/dV kernel is bound by that shared-memory traffic; Hopper's
// wgmma reads its operands from shared memory itself, described by 64-bit matrix
// descriptors. This program pins down, on the GPU, the descriptor and layout conventions such
// a kernel would build on, before any attention is written with them:
//
//   D (64 x 64, fp32) = A (64 x K, bf16) B^T (B: 64 x K, bf16), K = 64, as four
//   wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 by one warpgroup (128 threads),
//   operands in shared memory, against a CPU loop, in four layouts:
//
//   interleave, LBO=K   no swizzle: 8 x 8 "core matrices" (8 rows of 16 bytes, 128 B each);
//                       core matrix (m/8, k/8) at ((m/8) * K/8 + k/8) * 128 B; the
//                       descriptor's leading byte offset (LBO) = 128 B (the next core matrix
//                       along K), stride byte offset (SBO) = K/8 * 128 B (the next along M)
//   interleave, swapped the same layout with LBO and SBO exchanged: the control, expected
//                       to FAIL (CUTLASS's canonical K-major layout has LBO along K), so that
//                       a PASS above is known to depend on the descriptor's fields
//   swizzle128          rows of 64 bf16 (128 B), 16-byte chunk c of row r stored at chunk
//                       c ^ (r % 8), 8-row atoms of 1024 B (1024-byte aligned); SBO = 1024 B,
//                       swizzle mode 1 (128 B), the k-step's 32 bytes added to the start
//   swizzle128, B N-major  A as above; B stored the other way round, as P V's V is (keys x
//                       head channels, channels contiguous): row k of 64 bf16 holds B[k][n] for
//                       every n, the same XOR on its chunks; the instruction's trans-b = 1, SBO
//                       = 1024 B (8 k-rows), LBO = 8 KB (the next 64 columns: unused at N = 64),
//                       the k-step's two atoms (2048 B) added to the start
//
// (CUTLASS's GmmaDescriptor comments give the canonical layouts these follow.)
// and then times the swizzle128 form in a loop on every SM (wgmma from shared memory only,
// no loads) for the throughput such a kernel can reach, beside mma.sync's m16n8k16 on
// ldmatrix fragments of the same tiles (what our kernels do).
//   build/bin/wgmma-probe        (compiled for sm_90a: wgmma is not in plain sm_90)
// Prints one line per layout (its largest error, whether it matched and whether that was
// expected), the two rates, and PASS when every layout behaved as expected.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "wgmma.cuh"

namespace {

using bf16 = __nv_bfloat16;
constexpr int kM = 64, kN = 64, kK = 64;  // one tile; K = 4 wgmma k-steps of 16

enum Layout { kInterleave = 0, kInterleaveSwapped = 1, kSwizzle128 = 2, kSwizzle128BnMajor = 3 };
const char* layout_name(int l) {
  return l == kInterleave           ? "interleave, LBO=128 B along K"
         : l == kInterleaveSwapped ? "interleave, LBO/SBO swapped"
         : l == kSwizzle128        ? "swizzle128"
                                   : "swizzle128, B N-major";
}

// Byte offset of B[k][n] stored N-major with the 128-byte swizzle (kSwizzle128BnMajor's B).
__host__ __device__ inline int offset_bytes_n_major(int k, int n) {
  return k * 128 + ((n / 8) ^ (k % 8)) * 16 + (n % 8) * 2;
}

// Byte offset of element (row, k) of a rows x kK K-major operand in each layout.
__host__ __device__ inline int offset_bytes(int layout, int row, int k) {
  if (layout == kSwizzle128 || layout == kSwizzle128BnMajor) {
    const int chunk = (k / 8) ^ (row % 8);  // 16-byte chunks of a 128-byte row, XOR-swizzled
    return row * 128 + chunk * 16 + (k % 8) * 2;
  }
  const int core = (row / 8) * (kK / 8) + k / 8;  // core matrices of 8 rows x 16 bytes
  return core * 128 + (row % 8) * 16 + (k % 8) * 2;
}

namespace wg = gpuaccept::probes::wgmma;
using wg::fence_async_shared;

// The descriptor of `layout` (above) at k-step `kstep` of 16.
__device__ inline std::uint64_t descriptor(const void* smem, int layout, int kstep, bool n_major = false) {
  std::uint32_t addr = wg::smem_addr(smem), lbo, sbo;
  int swizzle = 0;
  if (n_major) {
    addr += kstep * 2048;  // 16 k-rows: two 8-row atoms of 1024 B
    lbo = 8192;            // the next 64 columns (N > 64 only)
    sbo = 1024;            // the next 8 k-rows
    swizzle = 1;
  } else if (layout == kSwizzle128 || layout == kSwizzle128BnMajor) {
    addr += kstep * 32;  // 16 bf16 of the 128-byte row; the hardware applies the XOR
    lbo = 16;            // unused for K-major swizzled operands; 1 (16 B) by convention
    sbo = 1024;          // 8 rows of 128 B
    swizzle = 1;
  } else {
    addr += kstep * 2 * 128;  // two core matrices along K per k-step of 16
    const std::uint32_t along_k = 128, along_m = (kK / 8) * 128;
    lbo = layout == kInterleave ? along_k : along_m;
    sbo = layout == kInterleave ? along_m : along_k;
  }
  return wg::descriptor(addr, lbo, sbo, swizzle);
}

using wg::mma_m64n64k16_ss;
using wg::commit;
using wg::fence;
using wg::wait;

// One warpgroup: A and B (row-major, kK columns) into shared memory in `layout`, the four
// k-steps, D written row-major. Thread t of warp w holds, for each 8-column block j, rows
// 16w + t/4 and +8, columns 8j + 2(t%4), +1 (the m16n8 accumulator's places, per warp).
__global__ void __launch_bounds__(128) tile_kernel(float* d, const bf16* a, const bf16* b, int layout) {
  __shared__ __align__(1024) unsigned char sa[kM * kK * 2];
  __shared__ __align__(1024) unsigned char sb[kN * kK * 2];
  const bool n_major = layout == kSwizzle128BnMajor;
  for (int i = threadIdx.x; i < kM * kK; i += blockDim.x) {
    const int row = i / kK, k = i % kK;  // a[row][k]; b[n = row][k], i.e. B^T's
    *reinterpret_cast<bf16*>(sa + offset_bytes(layout, row, k)) = a[i];
    *reinterpret_cast<bf16*>(sb + (n_major ? offset_bytes_n_major(k, row) : offset_bytes(layout, row, k))) = b[i];
  }
  fence_async_shared();
  __syncthreads();
  float acc[32];
  for (float& x : acc) x = 0.f;
  fence();
  for (int s = 0; s < kK / 16; ++s) {
    if (n_major)
      mma_m64n64k16_ss<1>(acc, descriptor(sa, layout, s), descriptor(sb, layout, s, true), s > 0);
    else
      mma_m64n64k16_ss(acc, descriptor(sa, layout, s), descriptor(sb, layout, s), s > 0);
  }
  commit();
  wait<0>();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int j = 0; j < kN / 8; ++j)
    for (int e = 0; e < 4; ++e) {
      const int row = 16 * warp + lane / 4 + (e / 2) * 8, col = 8 * j + 2 * (lane % 4) + e % 2;
      d[row * kN + col] = acc[4 * j + e];
    }
}

// Throughput: every CTA (one warpgroup) repeats the swizzle128 tile's four wgmma `reps`
// times on whatever its shared memory holds; the sum of the accumulators keeps the work.
__global__ void __launch_bounds__(128) wgmma_rate_kernel(float* sink, int reps) {
  __shared__ __align__(1024) unsigned char sa[kM * kK * 2];
  __shared__ __align__(1024) unsigned char sb[kN * kK * 2];
  for (int i = threadIdx.x; i < kM * kK * 2 / 4; i += blockDim.x) {
    reinterpret_cast<std::uint32_t*>(sa)[i] = 0x3c003c00u + i;
    reinterpret_cast<std::uint32_t*>(sb)[i] = 0x3c003c00u - i;
  }
  fence_async_shared();
  __syncthreads();
  float acc[32];
  for (float& x : acc) x = 0.f;
  for (int r = 0; r < reps; ++r) {
    fence();
    for (int s = 0; s < kK / 16; ++s)
      mma_m64n64k16_ss(acc, descriptor(sa, kSwizzle128, s), descriptor(sb, kSwizzle128, s), 1);
    commit();
    wait<0>();
  }
  float sum = 0.f;
  for (float x : acc) sum += x;
  if (sum == 12345.f) sink[blockIdx.x] = sum;
}

// The same products with mma.sync m16n8k16 on ldmatrix fragments (4 warps, each 16 rows of
// the 64 x 64 tile), as our attention kernels do, for the comparison.
__device__ inline void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  const auto addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ inline void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
constexpr int kRowStride = kK + 8;  // bf16: the padded rows our kernels use (no bank conflicts)
__global__ void __launch_bounds__(128) mma_sync_rate_kernel(float* sink, int reps) {
  __shared__ __align__(16) bf16 sa[kM * kRowStride];
  __shared__ __align__(16) bf16 sb[kN * kRowStride];
  for (int i = threadIdx.x; i < kM * kRowStride; i += blockDim.x) {
    sa[i] = __float2bfloat16(1.f + 1e-3f * (i % 97));
    sb[i] = __float2bfloat16(1.f - 1e-3f * (i % 89));
  }
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float acc[8][4] = {};
  for (int r = 0; r < reps; ++r)
    for (int ks = 0; ks < kK / 16; ++ks) {
      std::uint32_t a[4];
      ldmatrix_x4(a, sa + (warp * 16 + lane % 16) * kRowStride + ks * 16 + (lane / 16) * 8);
      for (int n2 = 0; n2 < kN / 16; ++n2) {
        std::uint32_t f[4];
        ldmatrix_x4(f, sb + (n2 * 16 + (lane / 16) * 8 + lane % 8) * kRowStride + ks * 16 + ((lane / 8) % 2) * 8);
        mma_m16n8k16(acc[2 * n2], a, f[0], f[1]);
        mma_m16n8k16(acc[2 * n2 + 1], a, f[2], f[3]);
      }
    }
  float sum = 0.f;
  for (auto& q : acc)
    for (float x : q) sum += x;
  if (sum == 12345.f) sink[blockIdx.x] = sum;
}

float bits_to_float(bf16 v) { return __bfloat162float(v); }

}  // namespace

int main() {
  int dev = 0;
  cudaDeviceProp prop{};
  CK(cudaGetDevice(&dev));
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("wgmma-probe: %s, %d SMs, compute capability %d.%d\n", prop.name, prop.multiProcessorCount, prop.major,
              prop.minor);
  if (prop.major != 9) {
    std::printf("wgmma-probe: SKIP (wgmma needs compute capability 9.0)\n");
    return 0;
  }

  // Random bf16 operands and the CPU's fp64 product of exactly those values.
  std::vector<bf16> a(kM * kK), b(kN * kK);
  std::uint64_t state = 20261126;
  auto uniform = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>((state >> 40) % 2001) / 1000.f - 1.f;
  };
  for (auto& x : a) x = __float2bfloat16(uniform());
  for (auto& x : b) x = __float2bfloat16(uniform());
  std::vector<double> ref(kM * kN, 0.0);
  double max_ref = 0;
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < kN; ++n) {
      double s = 0;
      for (int k = 0; k < kK; ++k) s += static_cast<double>(bits_to_float(a[m * kK + k])) * bits_to_float(b[n * kK + k]);
      ref[m * kN + n] = s;
      max_ref = std::fmax(max_ref, std::fabs(s));
    }

  bf16 *da = nullptr, *db = nullptr;
  float* dd = nullptr;
  CK(cudaMalloc(&da, a.size() * sizeof(bf16)));
  CK(cudaMalloc(&db, b.size() * sizeof(bf16)));
  CK(cudaMalloc(&dd, ref.size() * sizeof(float)));
  CK(cudaMemcpy(da, a.data(), a.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, b.data(), b.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  int unexpected = 0;
  for (int layout : {kInterleave, kInterleaveSwapped, kSwizzle128, kSwizzle128BnMajor}) {
    const bool expect_match = layout != kInterleaveSwapped;
    CK(cudaMemset(dd, 0xff, ref.size() * sizeof(float)));  // NaN: a place never written shows
    tile_kernel<<<1, 128>>>(dd, da, db, layout);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> got(ref.size());
    CK(cudaMemcpy(got.data(), dd, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double max_err = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double e = std::isfinite(got[i]) ? std::fabs(got[i] - ref[i]) : INFINITY;
      max_err = std::fmax(max_err, e);
    }
    // fp32 accumulation of 64 exact bf16 products: a few ulps of the largest value.
    const bool match = max_err <= 1e-5 * max_ref;
    unexpected += match == expect_match ? 0 : 1;
    std::printf("wgmma layout %-30s max_abs_err=%.3e (largest |D| %.3f) %s, %s\n", layout_name(layout), max_err,
                max_ref, match ? "matches the CPU" : "does not match", match == expect_match ? "as expected" : "UNEXPECTED");
  }

  // Rates: CTAs of one warpgroup, 4 per SM, 2 * 64 * 64 * 64 FLOPs per repetition each.
  float* sink = nullptr;
  const int ctas = 4 * prop.multiProcessorCount, reps = 20000;
  CK(cudaMalloc(&sink, ctas * sizeof(float)));
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  const double flops = 2.0 * kM * kN * kK * reps * ctas;
  for (int kind = 0; kind < 2; ++kind) {
    for (int warm = 0; warm < 2; ++warm) {  // the first launch warms the clocks; the second is timed
      CK(cudaEventRecord(t0));
      if (kind == 0)
        wgmma_rate_kernel<<<ctas, 128>>>(sink, reps);
      else
        mma_sync_rate_kernel<<<ctas, 128>>>(sink, reps);
      CK(cudaEventRecord(t1));
      CK(cudaGetLastError());
      CK(cudaEventSynchronize(t1));
    }
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, t0, t1));
    std::printf("rate %-48s %.1f TFLOP/s (%d CTAs x %d reps, %.2f ms)\n",
                kind == 0 ? "wgmma m64n64k16, operands from shared memory" : "mma.sync m16n8k16 on ldmatrix fragments",
                flops / (ms * 1e-3) / 1e12, ctas, reps, ms);
  }
  std::printf("wgmma-probe: %s (%d of 4 layouts not as expected)\n", unexpected == 0 ? "PASS" : "FAIL", unexpected);
  return unexpected == 0 ? 0 : 1;
}
