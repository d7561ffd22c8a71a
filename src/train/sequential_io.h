// What the filesystem gives a plain sequential writer and reader, the yardstick a training
// checkpoint's bandwidth is judged against: dd's `bs=16M conv=fsync` (write) and a read of
// the same file with its cached pages dropped first, on the same filesystem, with the same
// bytes per rank and the same ranks at once. CPU only.
#pragma once

#include <cstdint>
#include <filesystem>

namespace gpuaccept::train {

struct SequentialIo {
  std::uint64_t bytes = 0;
  double write_s = 0;  // open to fsync done
  double read_s = 0;   // open to the last byte, after posix_fadvise(DONTNEED)
};

// Writes `bytes` to `path` in 16 MiB blocks (a pattern, not zeros: no filesystem may skip it),
// fsyncs and drops the cached pages; returns the seconds (and in *fsync_s those of the fsync).
// Throws CallError naming the file (a full filesystem: what the system said), leaving no file.
double sequential_write(const std::filesystem::path& path, std::uint64_t bytes, double* fsync_s = nullptr);
// Reads back what sequential_write wrote (verifying the pattern) and removes the file;
// returns the seconds.
double sequential_read(const std::filesystem::path& path, std::uint64_t bytes);
// Both, one after the other.
SequentialIo sequential_write_read(const std::filesystem::path& path, std::uint64_t bytes);

}  // namespace gpuaccept::train
