// GEMM throughput per dtype and size through cuBLASLt (test "gemm", TFLOP/s =
// 2*m*n*k / median time), on random operands, with the chosen algorithm's output
// verified on sampled entries against a host reference.
#pragma once

#include <cstdint>

#include "results/record.h"
#include "smoke/gemm_verify.h"
#include "smoke/gpu_device.h"
#include "smoke/lt_gemm.h"
#include "smoke/smoke_config.h"

namespace gpuaccept::smoke {

Record measure_gemm(const GpuDevice& gpu, GemmDtype type, int size, const SmokeConfig& cfg);

// Checks `rows` x `rows` sampled entries of D (already computed from A and B).
GemmCheck verify_gemm(const LtGemm& gemm, const void* a, const void* b, const void* d, int rows, std::uint64_t seed);

// "verified 256 entries (worst error 0.12 of allowed)" or the first problem.
std::string describe_check(const GemmCheck& c);

}  // namespace gpuaccept::smoke
