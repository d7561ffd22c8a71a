#pragma once
// The shared flash attention's shapes, without CUDA headers (train/flash_attention_kernels.h
// declares the kernels with them; fsdp-lora's memory plan, host code built and unit-tested where
// there is no GPU, counts the backward's workspace from the same formula).
//
// Where the heads are: q, k, v and their gradients are token-major, head h of position t of
// sequence b at (b T + t) row + h HD, with q and dq rows `q_row` elements apart and k, v, dk, dv
// rows `kv_row` apart; y and dy are (B, T, NH, HD) contiguous. fsdp-lora keeps q, k and v apart
// (token_major: rows NH HD and NKV HD); ddp reads them in place from its projection's (B, T, 3,
// NH, HD) output and writes dq, dk, dv into its gradient (packed_qkv: rows 3 NH HD, k at q + NH
// HD, v at q + 2 NH HD).
#include <cstddef>

namespace gpuaccept::train {

inline constexpr int kFlashBlock = 64;  // queries (keys) per tile; T a multiple of it

struct FlashShape {
  int B = 0, T = 0, NH = 0, NKV = 0, HD = 0;
  long long q_row = 0, kv_row = 0;  // elements from one position to the next: q, dq; k, v, dk, dv

  static constexpr FlashShape token_major(int B, int T, int NH, int NKV, int HD) {
    return {B, T, NH, NKV, HD, static_cast<long long>(NH) * HD, static_cast<long long>(NKV) * HD};
  }
  static constexpr FlashShape packed_qkv(int B, int T, int NH, int HD) {
    const long long row = 3LL * NH * HD;
    return {B, T, NH, NH, HD, row, row};
  }
};

// The head sizes the kernels are built for (each kernel is a template instantiated for both).
constexpr bool flash_head_dim_supported(int HD) { return HD == 64 || HD == 128; }

// Whether the flash kernels take this shape (else a model runs its attention as matmuls).
constexpr bool flash_attention_supported(int T, int NH, int NKV, int HD) {
  return flash_head_dim_supported(HD) && T > 0 && T % kFlashBlock == 0 && NH > 0 && NKV > 0 && NH % NKV == 0;
}

// bf16 elements of the backward's dS workspace (variants 2 and 3): one 64 x 64 tile for every
// (query block, key block <= it) pair of every (batch, query head), the causal half of (B, NH,
// T, T), whatever the head size.
constexpr std::size_t flash_backward_ds_workspace_elems(int B, int T, int NH) {
  const auto blocks = static_cast<std::size_t>(T / kFlashBlock);
  return static_cast<std::size_t>(B) * static_cast<std::size_t>(NH) * (blocks * (blocks + 1) / 2) * kFlashBlock *
         kFlashBlock;
}

}  // namespace gpuaccept::train
