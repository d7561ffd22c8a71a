// Helpers shared by the fsdp-lora kernels of gpu/kernels/ (private to them): ddp's warp
// reductions, 16-byte loads and grid sizing (ddp/gpu/kernels/common.cuh, header-only), and the
// one launch and argument check (src/train's), whose messages name these kernels rather than ddp's.
#pragma once

#include <stdexcept>
#include <string>

#include "ddp/gpu/kernels/common.cuh"
#include "fsdp-lora/gpu/kernels.h"

namespace gpuaccept::fsdp::gpu::detail {

namespace dd = ddp::gpu::detail;

// Right after every launch: train/kernels/common.cuh's check, naming fsdp's kernel.
inline void check_launch(const char* kernel, const std::source_location& loc = std::source_location::current()) {
  train::detail::check_launch_of("fsdp", kernel, loc);
}

inline void require(bool ok, const char* what) { train::detail::require_of("fsdp", ok, what); }

}  // namespace gpuaccept::fsdp::gpu::detail
