#include "train/hash_ahead.h"

#include <algorithm>

#include <xxhash.h>

namespace gpuaccept::train {

namespace {
// The hasher's step: small enough to stay in a core's L2 between its read and the writer's.
constexpr std::uint64_t kHashStep = 1ull << 20;
}  // namespace

HashAhead::HashAhead(const void* data, std::uint64_t bytes, std::uint64_t lead)
    : data_(static_cast<const char*>(data)), bytes_(bytes), lead_(std::max<std::uint64_t>(lead, kHashStep)),
      thread_([this] { run(); }) {}

HashAhead::~HashAhead() {
  if (thread_.joinable()) {
    written_.store(kStop);
    written_.notify_one();
    thread_.join();
  }
}

void HashAhead::written(std::uint64_t bytes) {
  written_.store(bytes, std::memory_order_release);
  written_.notify_one();
}

std::uint64_t HashAhead::digest() {
  written(bytes_);  // nothing holds the hasher back any more
  thread_.join();
  return digest_;
}

void HashAhead::run() {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::uint64_t done = 0;
  while (done < bytes_) {
    const std::uint64_t w = written_.load(std::memory_order_acquire);
    if (w == kStop) break;
    const std::uint64_t limit = std::min(bytes_, w + lead_);
    if (done >= limit) {
      written_.wait(w, std::memory_order_acquire);  // until the writer moves on
      continue;
    }
    const std::uint64_t n = std::min(limit - done, kHashStep);
    XXH3_64bits_update(state, data_ + done, static_cast<std::size_t>(n));
    done += n;
  }
  digest_ = XXH3_64bits_digest(state);
  XXH3_freeState(state);
}

}  // namespace gpuaccept::train
