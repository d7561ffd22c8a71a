#pragma once
// The flash attention kernels' fixed shape and the backward's dS workspace size, without CUDA
// headers: gpu/kernels.h declares the kernels with them, and the memory plan (host code, built
// and unit-tested where there is no GPU) counts the workspace from the same formula.
#include <cstddef>

namespace gpuaccept::fsdp {

inline constexpr int kFlashHeadDim = 128;  // the kernels' head size
inline constexpr int kFlashBlock = 64;     // queries (keys) per tile; T a multiple of it

// Whether the flash kernels take this shape (else the model's GEMM attention runs).
constexpr bool flash_attention_supported(int T, int NH, int NKV, int HD) {
  return HD == kFlashHeadDim && T > 0 && T % kFlashBlock == 0 && NH > 0 && NKV > 0 && NH % NKV == 0;
}

// bf16 elements of backward variant 4's dS workspace: one 64 x 64 tile for every (query block,
// key block <= it) pair of every (batch, query head), the causal half of (B, NH, T, T).
constexpr std::size_t flash_backward_ds_workspace_elems(int B, int T, int NH) {
  const auto blocks = static_cast<std::size_t>(T / kFlashBlock);
  return static_cast<std::size_t>(B) * static_cast<std::size_t>(NH) * (blocks * (blocks + 1) / 2) * kFlashBlock *
         kFlashBlock;
}

}  // namespace gpuaccept::fsdp
