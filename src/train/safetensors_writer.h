// Writing a safetensors file (train/safetensors_reader.h describes the format) from tensors in
// host memory: what each rank's training checkpoint file is (train/checkpoint_files.h), so any
// safetensors tool can open one. CPU only.
//
// Layout: the header is padded with spaces (the format allows it) so that the data section
// starts at a multiple of 4096 bytes; tensors follow one another in the order given, with no
// gaps. Each tensor's bytes are hashed (XXH3-64, Debian's libxxhash) as they are written, a
// large one on a thread of its own just ahead of the writes (train/hash_ahead.h), so a checksum
// costs neither a second pass over memory nor the writer's time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "train/safetensors_reader.h"

namespace gpuaccept::train {

struct TensorToWrite {
  std::string name;
  Dtype dtype = Dtype::f32;
  std::vector<std::int64_t> shape;  // elements = product; [] is one element
  const void* data = nullptr;       // host memory, product(shape) * dtype_size(dtype) bytes
};

struct WrittenTensor {
  std::string name;
  std::uint64_t bytes = 0;
  std::uint64_t xxh3 = 0;  // XXH3-64 (seed 0) of the tensor's bytes
};

struct WrittenFile {
  std::uint64_t bytes = 0;  // the whole file
  std::vector<WrittenTensor> tensors;
  double write_s = 0;  // open to fsync done
  // Of write_s, the fsync; the rest is hashing, copying into the page cache and the writeback
  // started behind the writer (kWritebackWindow).
  double fsync_s = 0;
};

// Data section's alignment in the file: whole pages, so the data's writes are page-aligned.
inline constexpr std::uint64_t kSafetensorsDataAlign = 4096;

// Writeback started behind the writer every this many bytes (sync_file_range's
// SYNC_FILE_RANGE_WRITE, which does not wait): without it the kernel leaves a file's dirty pages
// alone until they pass vm.dirty_background_ratio of memory (12 GB on a 128 GB node) or the
// fsync, so the disk would idle while the page cache fills and the fsync would then wait for
// all of it.
inline constexpr std::uint64_t kWritebackWindow = 64ull << 20;

// Writes `path` (created or truncated) and fsyncs it; the page cache's copy is then dropped
// (posix_fadvise DONTNEED) so that a later read measures the filesystem, not memory. Throws
// CallError naming the file and what the system said (a full filesystem: "No space left on
// device", with how much was written); the partial file is removed then. writeback_window 0
// leaves writeback to the kernel (for comparison: checkpoint-drill bench).
WrittenFile write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                              const std::map<std::string, std::string>& metadata,
                              std::uint64_t writeback_window = kWritebackWindow);

// XXH3-64 of a byte range (what WrittenTensor::xxh3 holds), for verifying a read.
std::uint64_t xxh3_of(const void* data, std::size_t bytes);

}  // namespace gpuaccept::train
