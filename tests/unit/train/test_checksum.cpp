#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "train/checksum_kernels.h"

using gpuaccept::train::checksum_host;

namespace {

std::vector<unsigned char> bytes_of(std::size_t n) {
  std::vector<unsigned char> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>((i * 131 + 7) & 0xff);
  return b;
}

}  // namespace

TEST_CASE("checksum: the same bytes give the same value; a flipped bit, a swap or a length does not") {
  auto b = bytes_of(4096 + 5);
  const std::uint64_t sum = checksum_host(b.data(), b.size());
  CHECK(checksum_host(b.data(), b.size()) == sum);
  for (std::size_t at : {std::size_t{0}, std::size_t{100}, b.size() - 1}) {  // first word, middle, tail
    auto flipped = b;
    flipped[at] ^= 0x01;
    CHECK(checksum_host(flipped.data(), flipped.size()) != sum);
  }
  auto swapped = b;  // two 8-byte words trade places: XOR alone would not see it, the index mixed in does
  std::memcpy(swapped.data(), b.data() + 8, 8);
  std::memcpy(swapped.data() + 8, b.data(), 8);
  CHECK(checksum_host(swapped.data(), swapped.size()) != sum);
  std::vector<unsigned char> thirteen(13, 0), sixteen(16, 0);
  CHECK(checksum_host(thirteen.data(), 13) != checksum_host(sixteen.data(), 16));
}
