// The tensor-core and asynchronous-copy primitives both training phases' flash attentions
// are written with (ddp's head dim 64, fsdp-lora's 128 with grouped key/value heads), as
// inline PTX for sm_80 and later (the H100/H200 the suite runs on run them as sm_90):
//   ldmatrix_x4(_trans)  four 8x8 b16 matrices from shared memory into registers (transposed)
//   mma                  d (16x8, fp32) += a (16x16 bf16, row-major) b (16x8 bf16, col-major)
//   pack                 two fp32 as one bf16x2 register (round to nearest)
//   copy_async16         16 bytes global -> shared in the background (cp.async.cg); commit()
//                        closes a group of copies, wait<n>() waits until at most n are in flight
//   copy_async4          4 bytes the same way (cp.async.ca: 4-byte copies go through L1)
#pragma once

#include <cstdint>

#include <cuda_bf16.h>

namespace gpuaccept::train::tc {

__device__ inline void ldmatrix_x4(uint32_t (&r)[4], const __nv_bfloat16* p) {
  const auto a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ inline void ldmatrix_x4_trans(uint32_t (&r)[4], const __nv_bfloat16* p) {
  const auto a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
// d (16x8) += a (16x16, row) b (16x8, col)
__device__ inline void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ inline uint32_t pack(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ inline void copy_async16(void* dst, const void* src) {
  const auto d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
}
__device__ inline void copy_async4(void* dst, const void* src) {
  const auto d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(d), "l"(src));
}
__device__ inline void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ inline void wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

}  // namespace gpuaccept::train::tc
