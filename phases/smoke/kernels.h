// The smoke phase's own CUDA kernels, behind plain C++ launchers so that only
// kernels.cu goes through nvcc. Every launcher enqueues on `stream` and checks the launch.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "smoke/gemm_verify.h"

namespace gpuaccept::smoke {

// p[i] = uniform_pm1(seed, i) converted (round to nearest) to GEMM input type `t`.
void launch_fill_gemm_input(void* p, std::size_t count, GemmDtype t, std::uint64_t seed, cudaStream_t stream);

// words[i] = pattern_word(seed, i).
void launch_fill_pattern(std::uint64_t* words, std::size_t count, std::uint64_t seed, cudaStream_t stream);

// Grid and block for the bandwidth kernel: as many resident blocks as fill every SM.
struct StreamingLaunch {
  int grid = 0, block = 0;
};
StreamingLaunch streaming_launch_config(int device);

// out = in ^ kReadWriteMask per 32-bit lane, over `vectors` 16-byte vectors.
void launch_read_write(const void* in, void* out, std::size_t vectors, StreamingLaunch cfg, cudaStream_t stream);

// *sum += sum over i of mix(i, words[i]), modulo 2^64, over `count` 32-bit words.
void launch_checksum(const std::uint32_t* words, std::size_t count, unsigned long long* sum, cudaStream_t stream);

}  // namespace gpuaccept::smoke
