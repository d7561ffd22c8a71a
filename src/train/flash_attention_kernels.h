// Causal grouped-query attention without the (T, T) matrix in memory (FlashAttention-2, Dao
// 2023), the one both training phases call: ddp's GPT-2 (heads of 64, one key/value head per
// query head, q, k, v packed in its projection's output) and fsdp-lora's Qwen2 (heads of 128,
// grouped key/value heads, q, k, v apart). The kernels are templates on the head size,
// instantiated for 64 and 128 (train/kernels/flash_attention_*.cu); FlashShape
// (flash_attention_shape.h) says where the heads are. Query head h reads key/value head h / G,
// G = NH / NKV:
//   y[b,t,h,:] = sum_{t2 <= t} softmax_t2(q[b,t,h,:] . k[b,t2,h/G,:] / sqrt(HD)) v[b,t2,h/G,:]
// lse (B, NH, T) fp32: the natural-log sum of exp of the scaled scores per query row, written
// by the forward and read by the backward (which recomputes the probabilities from it).
// delta (B, NH, T) fp32: the backward's workspace, rowsum(dy o y). Scores, softmax statistics
// and every product accumulate in fp32; y, dq, dk, dv are rounded once to bf16 (overwritten).
// The backward is deterministic (no atomics: dk, dv of a key/value head summed over its query
// heads inside one block, dq in its own pass). T a multiple of kFlashBlock (64), NH a multiple
// of NKV, every pointer and row 16-byte aligned. Outputs must not overlap inputs.
// tests/gpu/fsdp_model_test.cu checks every variant at both head sizes against a float64 loop.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "train/flash_attention_shape.h"

namespace gpuaccept::train {

using bf16 = __nv_bfloat16;

// Forward variants: 0, 64 queries a block, a warp on 16 rows; 1, 128 queries a block, a warp on
// 32 rows (each K and V fragment feeds two row tiles: about half the shared-memory reads a
// product), used where T % 128 == 0 (variant 0 elsewhere); 2, 64 queries a block on Hopper's
// wgmma (flash_attention_forward_wgmma.cu), only where flash_forward_variant_available(2): an
// sm_90a build on a compute capability 9.0 GPU. On an H100 at B 2, T 4096, 28/4 heads of 128
// (fsdp-model-tests, 2026-11-26 13:03 UTC): 0 0.92 ms, 1 0.74 ms, 2 0.53 ms, all within the
// float64 loop's tolerances.
// flash_forward_default_variant(): 2 where available, else 1 (GPUACCEPT_FLASH_FWD picks another).
inline constexpr int kFlashForwardVariants = 3;
bool flash_forward_variant_available(int variant);
int flash_forward_default_variant();
void flash_attention_forward(bf16* y, float* lse, const bf16* q, const bf16* k, const bf16* v, const FlashShape& shape,
                             cudaStream_t stream, int variant = flash_forward_default_variant());

// y and lse from flash_attention_forward of the same q, k, v. `variant` picks the backward's
// kernels (all deterministic, all to the same tolerances; flash_attention_backward.cu says
// more). On an H100 at B 2, T 4096, 28/4 heads of 128 (fsdp-model-tests, 2026-11-26 13:03 UTC):
// 0 3.41 ms, 1 3.26 ms, 2 2.71 ms, 3 1.44 ms:
//   0  dK/dV kernel (Q/dO double-buffered, 1 CTA/SM) + a dQ kernel (recomputes P and dS)
//   1  dK/dV kernel single-buffered (2 CTAs/SM) + the dQ kernel
//   2  as 1, the dK/dV kernel also writing its dS^T tiles (bf16) to ds_workspace
//      (flash_backward_ds_workspace_elems: the causal half of (B, NH, T, T), 0.95 GB at the 7B
//      shape's B 2, T 4096), and a dQ kernel that only sums dS K from them: 5 products a tile
//      instead of 7.
//   3  as 2 with both kernels on Hopper's wgmma (flash_attention_backward_wgmma.cu): only where
//      flash_backward_variant_available(3), an sm_90a build on a compute capability 9.0 GPU.
// flash_backward_default_variant(): 3 where available, else 2 (GPUACCEPT_FLASH_BWD picks another).
// ds_workspace (16-byte aligned) is needed where flash_backward_stores_ds.
//
// Column sums: where flash_backward_sums_columns(variant) (3), the kernels can also write the
// sums of dq, dk and dv over each block of kFlashBlock (64) positions, of the values stored
// (bf16), into fp32 rows laid out like theirs: dq's block sums at
// dq_sums[(b T/64 + block) q_row + h HD + c], dk's and dv's likewise with kv_row (B T/64 rows
// each). Summed over the rows, they are the
// bias gradient of the projection that made q, k and v, without another pass over dq, dk, dv
// (ddp's qkv projection: with the packed layout one buffer of 3C columns holds all three, at
// dq_sums = S, dk_sums = S + C, dv_sums = S + 2C). In a fixed order: the same bits every run.
struct FlashColumnSums {
  float* dq = nullptr;
  float* dk = nullptr;
  float* dv = nullptr;
};
inline constexpr int kFlashBackwardVariants = 4;
bool flash_backward_variant_available(int variant);
int flash_backward_default_variant();
bool flash_backward_stores_ds(int variant);
bool flash_backward_sums_columns(int variant);
void flash_attention_backward(bf16* dq, bf16* dk, bf16* dv, float* delta, const bf16* dy, const bf16* y,
                              const float* lse, const bf16* q, const bf16* k, const bf16* v, const FlashShape& shape,
                              cudaStream_t stream, int variant = flash_backward_default_variant(),
                              bf16* ds_workspace = nullptr, const FlashColumnSums& sums = {});

// The compiled kernels of forward variant `forward_variant` and backward variant `variant` for
// head size `head_dim`, as the device sees them (cudaFuncGetAttributes,
// cudaOccupancyMaxActiveBlocksPerMultiprocessor): out[0] the forward, then the backward's dK/dV
// kernel and its dQ kernel. Returns the count.
struct FlashKernelResources {
  const char* name;
  int threads, regs, static_smem, dynamic_smem, max_dynamic_smem, local_bytes, blocks_per_sm;
};
int flash_kernel_resources(int head_dim, int variant, FlashKernelResources (&out)[3],
                           int forward_variant = flash_forward_default_variant());

}  // namespace gpuaccept::train
