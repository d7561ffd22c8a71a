// fp32 <-> bf16 on the GPU for both training phases: the bf16 weights the matmuls read from
// the fp32 master copy (ddp's whole model, fsdp-lora's LoRA buffer), and a gradient bucket's
// parts packed side by side as bf16 for the all-reduce and back (ddp's gpu/gradient_sync.h).
// Each launcher enqueues on `stream` and returns at once; a bad argument throws
// std::invalid_argument, a failed launch a CallError (common/error.h). Rounding is to nearest
// even, as the host's conversion; widening is exact. tests/gpu/ddp_kernels_test.cu checks all
// three against the host, bit for bit.
#pragma once

#include <cstddef>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace gpuaccept::train {

using bf16 = __nv_bfloat16;

// params[i] = bf16(master[i]), round to nearest even
void cast_to_bf16(bf16* out, const float* in, std::size_t n, cudaStream_t stream);

// A gradient bucket's parts (ddp's gpu/gradient_sync.h: one stretch of the flat fp32 buffer per
// tensor, `extra` after them) packed side by side as bf16 for the all-reduce, and back: one
// launch for all of a bucket's parts (one per part made ~150 launches of 7-9 us a step).
//   pack:   packed[at[k] + i] = bf16(fp32[k][i])      for i < count[k], every part k
//   unpack: fp32[k][i] = float(packed[at[k] + i])    (exact)
inline constexpr int kMaxPackedParts = 32;
struct PackedParts {
  float* fp32[kMaxPackedParts] = {};
  std::size_t at[kMaxPackedParts] = {};
  std::size_t count[kMaxPackedParts] = {};
  int parts = 0;
};
void pack_to_bf16(bf16* packed, const PackedParts& parts, cudaStream_t stream);
void unpack_to_fp32(const PackedParts& parts, const bf16* packed, cudaStream_t stream);

}  // namespace gpuaccept::train
