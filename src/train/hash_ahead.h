// XXH3-64 of a buffer on a thread of its own, a little ahead of a writer that copies the same
// buffer into a file (train/safetensors_writer.cpp). Why: hashing then writing each chunk on
// one thread reads the buffer from memory twice and adds the hash's time to the write's; a
// checkpoint's buffer is gigabytes, far more than any cache. With the hash on its own core,
// at most `lead` bytes ahead of what the writer has handed to write(), each chunk is read from
// memory once (by the hasher) and is still in the shared cache when write() copies it.
//
//   HashAhead hash(p, bytes, 8 << 20);
//   for (...) { write(fd, p + done, n); done += n; hash.written(done); }
//   std::uint64_t xxh3 = hash.digest();   // waits for the hasher to finish
//
// Destroying it without digest() (the writer threw) stops the hasher and joins it.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace gpuaccept::train {

class HashAhead {
 public:
  HashAhead(const void* data, std::uint64_t bytes, std::uint64_t lead);
  ~HashAhead();
  HashAhead(const HashAhead&) = delete;
  HashAhead& operator=(const HashAhead&) = delete;

  // The writer has handed the first `bytes` to write(): the hasher may go `lead` past them.
  void written(std::uint64_t bytes);
  // The whole buffer's XXH3-64 (seed 0), once the hasher is through it. Call once, after the
  // last written().
  std::uint64_t digest();

 private:
  void run();

  static constexpr std::uint64_t kStop = ~std::uint64_t{0};  // written_'s value that ends the hasher

  const char* data_;
  std::uint64_t bytes_;
  std::uint64_t lead_;
  std::atomic<std::uint64_t> written_{0};
  std::uint64_t digest_ = 0;
  std::thread thread_;  // last: started once the members above are set
};

}  // namespace gpuaccept::train
