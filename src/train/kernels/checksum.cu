// checksum_kernels.h: XOR of mixed 8-byte words, one partial per thread folded by warp
// shuffles, one atomicXor per warp into the result (XOR is order-free: deterministic).
#include "train/checksum_kernels.h"

#include <cstring>

#include "train/kernels/common.cuh"

namespace gpuaccept::train {

using namespace detail;

namespace {

// The runtime calls around the launch, failing as the launches do (common.cuh's message form).
void check_call(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw std::runtime_error(std::string("train kernel checksum: ") + what + ": " + cudaGetErrorString(rc));
}

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

__host__ __device__ inline std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__global__ void checksum_kernel(unsigned long long* out, const std::uint64_t* words, std::size_t n,
                                std::uint64_t tail, bool has_tail, std::size_t bytes) {
  std::uint64_t acc = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    acc ^= mix(words[i] + kGolden * (i + 1));
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    if (has_tail) acc ^= mix(tail + kGolden * (n + 1));
    acc ^= mix(bytes ^ kGolden);  // the length: 13 bytes and 16 with 3 zeros differ
  }
  for (int offset = 16; offset > 0; offset /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
  if ((threadIdx.x & 31) == 0) atomicXor(out, static_cast<unsigned long long>(acc));
}

}  // namespace

void checksum_device(std::uint64_t* out, const void* data, std::size_t bytes, cudaStream_t stream) {
  static_assert(sizeof(unsigned long long) == sizeof(std::uint64_t));
  const std::size_t n = bytes / 8, rest = bytes % 8;
  std::uint64_t tail = 0;
  if (rest > 0) {  // the last few bytes, zero-padded, read on the host side of the stream
    check_call(cudaMemcpyAsync(&tail, static_cast<const char*>(data) + n * 8, rest, cudaMemcpyDeviceToHost, stream),
               "cudaMemcpyAsync (tail)");
    check_call(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  require(reinterpret_cast<std::uintptr_t>(data) % 8 == 0, "checksum_device: data must be 8-byte aligned");
  check_call(cudaMemsetAsync(out, 0, sizeof(std::uint64_t), stream), "cudaMemsetAsync");
  constexpr int kThreads = 256;
  const int blocks = static_cast<int>(std::min<std::size_t>((n + kThreads - 1) / kThreads + 1, 4096));
  checksum_kernel<<<blocks, kThreads, 0, stream>>>(reinterpret_cast<unsigned long long*>(out),
                                                   static_cast<const std::uint64_t*>(data), n, tail, rest > 0,
                                                   bytes);
  check_launch("checksum");
}

std::uint64_t checksum_host(const void* data, std::size_t bytes) {
  const std::size_t n = bytes / 8, rest = bytes % 8;
  std::uint64_t acc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t w = 0;
    std::memcpy(&w, static_cast<const char*>(data) + i * 8, 8);
    acc ^= mix(w + kGolden * (i + 1));
  }
  if (rest > 0) {
    std::uint64_t tail = 0;
    std::memcpy(&tail, static_cast<const char*>(data) + n * 8, rest);
    acc ^= mix(tail + kGolden * (n + 1));
  }
  return acc ^ mix(bytes ^ kGolden);
}

}  // namespace gpuaccept::train
