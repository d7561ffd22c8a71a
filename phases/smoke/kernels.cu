#include "smoke/kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "cuda/cuda_check.h"
#include "smoke/random_fill.h"

namespace gpuaccept::smoke {

namespace {

constexpr int kBlock = 256;

int grid_for(std::size_t items, int per_block_items) {
  const std::size_t blocks = (items + per_block_items - 1) / per_block_items;
  return static_cast<int>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

template <typename T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) { return v; }
template <>
__device__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }

// p[i] = T(uniform in [-1,1)): random operands, so no GEMM is timed or checked on zeros.
template <typename T>
__global__ void fill_uniform_kernel(T* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = from_float<T>(uniform_pm1(seed, i));
}

// words[i] = a 64-bit hash of (seed, i): incompressible, and checkable anywhere from i.
__global__ void fill_pattern_kernel(std::uint64_t* words, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    words[i] = pattern_word(seed, i);
}

// out[i] = in[i] ^ mask for 16-byte vectors. Each thread issues kUnroll independent
// loads before any store, so enough requests are in flight to saturate HBM; lanes
// of a warp touch consecutive vectors (coalesced), and the loop is grid-stride.
constexpr int kUnroll = 4;
__global__ void read_write_kernel(const uint4* __restrict__ in, uint4* __restrict__ out, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x * kUnroll;
  for (std::size_t base = blockIdx.x * static_cast<std::size_t>(blockDim.x) * kUnroll + threadIdx.x; base < n;
       base += stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::size_t i = base + static_cast<std::size_t>(u) * blockDim.x;
      if (i < n) v[u] = in[i];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::size_t i = base + static_cast<std::size_t>(u) * blockDim.x;
      if (i < n) {
        v[u].x ^= kReadWriteMask;
        v[u].y ^= kReadWriteMask;
        v[u].z ^= kReadWriteMask;
        v[u].w ^= kReadWriteMask;
        out[i] = v[u];
      }
    }
  }
}

// sum += sum_i splitmix64(i << 32 | w[i]) mod 2^64. Integer addition is associative,
// so the result is bitwise reproducible whatever order blocks finish in; mixing the
// index in makes swapped or shifted elements change the sum.
__global__ void checksum_kernel(const std::uint32_t* __restrict__ w, std::size_t n, unsigned long long* sum) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    local += splitmix64((static_cast<std::uint64_t>(i) << 32) | w[i]);
  for (int off = 16; off > 0; off /= 2) local += __shfl_down_sync(0xffffffffu, local, off);
  __shared__ unsigned long long warp_sums[kBlock / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = local;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long block = 0;
    for (int i = 0; i < kBlock / 32; ++i) block += warp_sums[i];
    atomicAdd(sum, block);
  }
}

template <typename T>
void fill_as(void* p, std::size_t n, std::uint64_t seed, cudaStream_t s) {
  fill_uniform_kernel<T><<<grid_for(n, kBlock * 8), kBlock, 0, s>>>(static_cast<T*>(p), n, seed);
}

}  // namespace

void launch_fill_gemm_input(void* p, std::size_t count, GemmDtype t, std::uint64_t seed, cudaStream_t stream) {
  switch (t) {
    case GemmDtype::bf16: fill_as<__nv_bfloat16>(p, count, seed, stream); break;
    case GemmDtype::fp16: fill_as<__half>(p, count, seed, stream); break;
    case GemmDtype::tf32:
    case GemmDtype::fp32: fill_as<float>(p, count, seed, stream); break;
    case GemmDtype::fp8_e4m3: fill_as<__nv_fp8_e4m3>(p, count, seed, stream); break;
  }
  GPUACCEPT_CUDA_CHECK_LAUNCH();
}

void launch_fill_pattern(std::uint64_t* words, std::size_t count, std::uint64_t seed, cudaStream_t stream) {
  fill_pattern_kernel<<<grid_for(count, kBlock * 8), kBlock, 0, stream>>>(words, count, seed);
  GPUACCEPT_CUDA_CHECK_LAUNCH();
}

StreamingLaunch streaming_launch_config(int device) {
  int sms = 0, per_sm = 0;
  GPUACCEPT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  GPUACCEPT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, read_write_kernel, kBlock, 0));
  return {sms * (per_sm > 0 ? per_sm : 1), kBlock};
}

void launch_read_write(const void* in, void* out, std::size_t vectors, StreamingLaunch cfg, cudaStream_t stream) {
  read_write_kernel<<<cfg.grid, cfg.block, 0, stream>>>(static_cast<const uint4*>(in), static_cast<uint4*>(out),
                                                        vectors);
  GPUACCEPT_CUDA_CHECK_LAUNCH();
}

void launch_checksum(const std::uint32_t* words, std::size_t count, unsigned long long* sum, cudaStream_t stream) {
  checksum_kernel<<<grid_for(count, kBlock * 16), kBlock, 0, stream>>>(words, count, sum);
  GPUACCEPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuaccept::smoke
