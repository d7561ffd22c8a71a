// The random frozen base, filled on each rank's GPU shard by shard (kernels.h's
// init_base_piece): the value of an element depends only on (seed, tensor, its index in the
// tensor), through base_init.h's base_init_value, which the host uses too.
#include <nvtx3/nvToolsExt.h>

#include "fsdp-lora/base_init.h"
#include "fsdp-lora/gpu/kernels/common.cuh"

namespace gpuaccept::fsdp::gpu {

namespace {

namespace td = detail::td;

__global__ void init_piece_kernel(bf16* __restrict__ dst, std::uint64_t numel, std::uint64_t seed,
                                  std::uint64_t tensor, std::uint64_t first, float half_width) {
  for (std::size_t i = td::global_thread(); i < numel; i += td::global_threads()) {
    const std::uint16_t bits = bf16_bits(base_init_value(seed, tensor, first + i, half_width));
    dst[i] = __ushort_as_bfloat16(bits);
  }
}

}  // namespace

void init_base_piece(bf16* buffer, const InitPiece& piece, std::uint64_t seed, cudaStream_t stream) {
  if (piece.numel == 0) return;
  nvtxRangePushA("init_base_piece");
  constexpr int kBlock = 256;
  init_piece_kernel<<<td::grid_for(piece.numel, kBlock), kBlock, 0, stream>>>(buffer + piece.dest_offset, piece.numel,
                                                                              seed, piece.tensor, piece.first,
                                                                              piece.half_width);
  nvtxRangePop();
  detail::check_launch("init_base_piece");
}

}  // namespace gpuaccept::fsdp::gpu
