#include "nccl-scaling/verify.h"

#include <algorithm>
#include <cstdint>

#include <cuda_bf16.h>

#include "cuda/cuda_check.h"

namespace gpuaccept::nccl_scaling {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::size_t count) {
  // Grid-stride loops: enough blocks to fill the GPU, not one per element.
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>((count + kThreads - 1) / kThreads, 8192)));
}

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ inline T from_int(int v);
template <>
__device__ inline float from_int<float>(int v) { return static_cast<float>(v); }
template <>
__device__ inline __nv_bfloat16 from_int<__nv_bfloat16>(int v) { return __float2bfloat16_rn(static_cast<float>(v)); }

template <typename T>
__global__ void fill_kernel(T* buf, std::uint64_t count, ExpectArgs args, int rank) {
  const std::uint64_t step = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < count; i += step)
    buf[i] = from_int<T>(input_value(args, rank, i));
}

template <typename T>
__global__ void count_wrong_kernel(const T* out, std::uint64_t count, ExpectArgs args, unsigned long long* wrong) {
  const std::uint64_t step = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  unsigned long long mine = 0;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < count; i += step) {
    const float got = to_float(out[i]);
    const float want = static_cast<float>(expected_output(args, i));
    if (!(got == want)) ++mine;  // NaN (the poison) equals nothing
  }
  for (int off = 16; off > 0; off >>= 1) mine += __shfl_down_sync(0xffffffffu, mine, off);
  if ((threadIdx.x & 31) == 0 && mine != 0) atomicAdd(wrong, mine);
}

}  // namespace

void fill_input(void* buf, std::size_t count, Dtype dtype, const ExpectArgs& args, int rank, cudaStream_t stream) {
  if (count == 0) return;
  if (dtype == Dtype::Float)
    fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<float*>(buf), count, args, rank);
  else
    fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(buf), count, args, rank);
  GPUACCEPT_CUDA_CHECK_LAUNCH();
}

void poison(void* buf, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(buf, 0xFF, bytes, stream));
}

void count_wrong(const void* out, std::size_t count, Dtype dtype, const ExpectArgs& args, unsigned long long* wrong,
                 cudaStream_t stream) {
  if (count == 0) return;
  if (dtype == Dtype::Float)
    count_wrong_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const float*>(out), count, args, wrong);
  else
    count_wrong_kernel<<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(out), count, args,
                                                                   wrong);
  GPUACCEPT_CUDA_CHECK_LAUNCH();
}

}  // namespace gpuaccept::nccl_scaling
