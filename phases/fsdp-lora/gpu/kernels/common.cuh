// Helpers shared by the fsdp-lora kernels of gpu/kernels/ (private to them): the training
// phases' warp and block reductions, 16-byte loads and grid sizing (src/train/kernels/common.cuh,
// header-only, the ones ddp's kernels use too) as td::, and the one launch and argument check
// (src/train's), whose messages name these kernels.
#pragma once

#include <stdexcept>
#include <string>

#include "fsdp-lora/gpu/kernels.h"
#include "train/kernels/common.cuh"

namespace gpuaccept::fsdp::gpu::detail {

namespace td = train::detail;  // the training phases' device helpers

// Right after every launch: train/kernels/common.cuh's check, naming fsdp's kernel.
inline void check_launch(const char* kernel, const std::source_location& loc = std::source_location::current()) {
  train::detail::check_launch_of("fsdp", kernel, loc);
}

inline void require(bool ok, const char* what) { train::detail::require_of("fsdp", ok, what); }

}  // namespace gpuaccept::fsdp::gpu::detail
