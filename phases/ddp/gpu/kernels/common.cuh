// Helpers shared by the kernels of gpu/kernels/ (private to them): the training phases'
// device helpers (src/train/kernels/common.cuh: warp and block reductions, 16-byte bf16
// loads, grid sizing) under ddp's detail namespace, and the launch and argument checks,
// whose messages name ddp's kernels.
#pragma once

#include "ddp/gpu/kernels.h"
#include "train/kernels/common.cuh"

namespace gpuaccept::ddp::gpu::detail {

using train::detail::aligned16;
using train::detail::block_max;
using train::detail::block_reduce;
using train::detail::block_sum;
using train::detail::ceil_div;
using train::detail::copy_bf16;
using train::detail::global_thread;
using train::detail::global_threads;
using train::detail::grid_for;
using train::detail::kFullMask;
using train::detail::kWarp;
using train::detail::load_bf16;
using train::detail::store_bf16;
using train::detail::warp_max;
using train::detail::warp_sum;

inline void check_launch(const char* kernel) { train::detail::check_launch_of("ddp", kernel); }
inline void require(bool ok, const char* what) { train::detail::require_of("ddp", ok, what); }

}  // namespace gpuaccept::ddp::gpu::detail
