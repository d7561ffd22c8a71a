// What the cuBLASLt probes (epilogue_probe.cu, matmul_search_probe.cu) share: a check that
// prints the failing call with its file and line and exits, a fill of pseudo-random bf16
// values, and the median time of back-to-back launches. Diagnostics only, built without the
// project's libraries: a phase's code uses src/cuda's checks and timing instead.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                       \
  do {                                                                                              \
    const auto e_ = (x);                                                                            \
    if (e_ != 0) {                                                                                  \
      std::printf("%s failed: %d (%s:%d)\n", #x, static_cast<int>(e_), __FILE__, __LINE__);        \
      std::exit(1);                                                                                 \
    }                                                                                               \
  } while (0)

// p[i] uniform in [-scale, scale], from a hash of i and seed: the same values every run. Each
// probe is one translation unit, so the kernel is defined here once per program.
__global__ void fill(__nv_bfloat16* p, std::size_t n, unsigned seed, float scale) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = __float2bfloat16(((h & 0xffff) / 65535.0f * 2.f - 1.f) * scale);
  }
}

// The median of `reps` launches (ms), each timed alone by events on the default stream; `launch`
// returns its status (a cuBLAS or CUDA one), checked by CK. The caller warms up first.
template <typename Launch>
float median_ms(const Launch& launch, int reps) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(e0));
    CK(launch());
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
