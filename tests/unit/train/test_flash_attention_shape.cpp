// The shared flash attention's shapes (train/flash_attention_shape.h): where the heads are in
// each phase's layout, which shapes the kernels take, and the backward's dS workspace, which
// fsdp-lora's memory plan counts and ddp allocates.
#include <catch2/catch.hpp>

#include "train/flash_attention_kernels.h"
#include "train/flash_attention_shape.h"

using namespace gpuaccept::train;

TEST_CASE("fsdp-lora's heads are token-major, q and k, v apart") {
  // Qwen2-7B: 28 query heads, 4 key/value heads of 128.
  constexpr FlashShape s = FlashShape::token_major(2, 4096, 28, 4, 128);
  CHECK(s.q_row == 28 * 128);
  CHECK(s.kv_row == 4 * 128);
  CHECK(s.NKV == 4);
}

TEST_CASE("ddp's heads are read in place from the packed qkv projection") {
  // GPT-2 124M: 12 heads of 64; a row holds q, k and v of every head (3 x 768).
  constexpr FlashShape s = FlashShape::packed_qkv(16, 1024, 12, 64);
  CHECK(s.q_row == 3 * 768);
  CHECK(s.kv_row == 3 * 768);
  CHECK(s.NKV == s.NH);  // one key/value head per query head
}

TEST_CASE("the kernels take heads of 64 and 128, T a multiple of 64, NH a multiple of NKV") {
  CHECK(flash_attention_supported(1024, 12, 12, 64));
  CHECK(flash_attention_supported(4096, 28, 4, 128));
  CHECK_FALSE(flash_attention_supported(1024, 12, 12, 96));  // no kernel for 96
  CHECK_FALSE(flash_attention_supported(1024, 12, 12, 32));
  CHECK_FALSE(flash_attention_supported(1000, 12, 12, 64));  // not whole tiles of 64
  CHECK_FALSE(flash_attention_supported(0, 12, 12, 64));
  CHECK_FALSE(flash_attention_supported(1024, 12, 5, 64));  // groups of unequal size
}

TEST_CASE("the dS workspace holds the causal half of (B, NH, T, T) in 64 x 64 tiles") {
  // 4096 / 64 = 64 blocks: 64 x 65 / 2 = 2080 tiles a head; 0.95 GB of bf16 at the 7B shape.
  CHECK(flash_backward_ds_workspace_elems(2, 4096, 28) == 2ull * 28 * 2080 * 64 * 64);
  CHECK(flash_backward_ds_workspace_elems(2, 4096, 28) * 2 == 954'204'160ull);
  // ddp's GPT-2 124M step: 16 blocks, 136 tiles a head, 214 MB.
  CHECK(flash_backward_ds_workspace_elems(16, 1024, 12) * 2 == 213'909'504ull);
  // One tile: T = 64.
  CHECK(flash_backward_ds_workspace_elems(1, 64, 1) == 64 * 64);
}

TEST_CASE("only the wgmma backward (variant 3) sums dq, dk, dv's columns") {
  CHECK(flash_backward_sums_columns(3));
  for (int variant = 0; variant < 3; ++variant) CHECK_FALSE(flash_backward_sums_columns(variant));
}
