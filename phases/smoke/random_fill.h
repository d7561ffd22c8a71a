// Counter-based pseudo-random values shared by the GPU kernels and the host checks:
// the value at index i is a pure function of (seed, i), so the host recomputes any
// element it wants to verify without copying the whole input back.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GPA_HOST_DEVICE __host__ __device__
#else
#define GPA_HOST_DEVICE
#endif

namespace gpuaccept::smoke {

// SplitMix64's finaliser: a bijective mix with good avalanche, the usual choice for
// hashing a counter into random bits.
GPA_HOST_DEVICE inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

GPA_HOST_DEVICE inline std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t i) {
  return splitmix64(seed ^ (i * 0xD1B54A32D192ED03ull));
}

// Uniform in [-1, 1): the top 24 bits of the hash, exactly representable in float.
GPA_HOST_DEVICE inline float uniform_pm1(std::uint64_t seed, std::uint64_t i) {
  return static_cast<float>(pattern_word(seed, i) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

// The read-write kernel's transform of each 32-bit lane (out = in ^ mask), as a 64-bit word.
inline constexpr std::uint32_t kReadWriteMask = 0x5A5A5A5Au;
GPA_HOST_DEVICE inline std::uint64_t read_write_expected(std::uint64_t in) {
  return in ^ ((static_cast<std::uint64_t>(kReadWriteMask) << 32) | kReadWriteMask);
}

}  // namespace gpuaccept::smoke
