// HashAhead (train/hash_ahead.h): the XXH3 it computes on its own thread, held back to `lead`
// bytes past what the writer reports, is the whole buffer's, whatever the steps and sizes;
// destroyed before the end (the writer threw) it stops instead of waiting for ever.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include <xxhash.h>

#include "train/hash_ahead.h"

using gpuaccept::train::HashAhead;

namespace {
std::vector<unsigned char> bytes_of(std::size_t n) {
  std::vector<unsigned char> v(n);
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  for (auto& b : v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<unsigned char>(x);
  }
  return v;
}
}  // namespace

TEST_CASE("the hash ahead of the writer is the buffer's XXH3, for any size, step and lead") {
  const std::size_t MiB = 1 << 20;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, MiB - 1, MiB, 5 * MiB + 3}) {
    const auto data = bytes_of(n);
    for (const std::uint64_t lead : {std::uint64_t{1}, std::uint64_t{MiB}, std::uint64_t{8 * MiB}}) {
      for (const std::size_t step : {std::size_t{333'333}, 4 * MiB}) {
        CAPTURE(n, lead, step);
        HashAhead hash(data.data(), n, lead);
        for (std::size_t done = 0; done < n;) {
          done = std::min(n, done + step);
          hash.written(done);
        }
        CHECK(hash.digest() == XXH3_64bits(data.data(), n));
      }
    }
  }
}

TEST_CASE("the hash ahead is the buffer's XXH3 when the writer reports nothing before the end") {
  const auto data = bytes_of(3 << 20);
  HashAhead hash(data.data(), data.size(), 1);
  CHECK(hash.digest() == XXH3_64bits(data.data(), data.size()));
}

TEST_CASE("a hash ahead destroyed before the end (the writer threw) stops its thread") {
  const auto data = std::make_shared<const std::vector<unsigned char>>(bytes_of(16 << 20));
  for (const std::uint64_t reported : {std::uint64_t{0}, std::uint64_t{5 << 20}}) {
    CAPTURE(reported);
    // The destructor would wait for ever if the hasher waited for the writer: run on a thread
    // of its own (detached, owning what it reads, so a hang fails here instead of hanging the
    // test), it must return within a bound far above the milliseconds it takes.
    std::promise<void> destroyed;
    std::future<void> done = destroyed.get_future();
    std::thread([data, reported, destroyed = std::move(destroyed)]() mutable {
      {
        HashAhead hash(data->data(), data->size(), 1 << 20);
        if (reported) hash.written(reported);
      }
      destroyed.set_value();
    }).detach();
    REQUIRE(done.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  }
}
