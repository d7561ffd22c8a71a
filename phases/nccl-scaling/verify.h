// Device-side data for the verification run: fill an input with the pattern of
// expected.h, poison an output with NaN, and count the output elements that differ from
// the expected formula, all on the GPU (an 8 GiB output is never copied to the host).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "nccl-scaling/dtype.h"
#include "nccl-scaling/expected.h"

namespace gpuaccept::nccl_scaling {

// buf[i] = input_value(args, rank, i) for i in [0, count).
void fill_input(void* buf, std::size_t count, Dtype dtype, const ExpectArgs& args, int rank, cudaStream_t stream);

// All bytes 0xFF: a NaN in float and in bf16, equal to no expected value.
void poison(void* buf, std::size_t bytes, cudaStream_t stream);

// *wrong += number of i in [0, count) with out[i] != expected_output(args, i).
void count_wrong(const void* out, std::size_t count, Dtype dtype, const ExpectArgs& args, unsigned long long* wrong,
                 cudaStream_t stream);

}  // namespace gpuaccept::nccl_scaling
