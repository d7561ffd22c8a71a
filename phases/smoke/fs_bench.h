// Filesystem measurements one rank per node makes in the shared directory:
// small-file metadata latency (create, stat, unlink) and streaming write/read
// throughput. Functions of a path, so they also run (and are tested) on any directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace gpuaccept::smoke {

struct FsMetadata {
  double create_us = 0, stat_us = 0, unlink_us = 0;  // mean per file
  std::string error;                                  // "" when all operations succeeded
};
// Creates `files` empty files in a fresh subdirectory `dir`, stats and unlinks them.
FsMetadata measure_metadata(const std::filesystem::path& dir, int files);

struct FsStream {
  double write_gbs = 0, read_gbs = 0;
  std::string error;  // "" when written, read back and verified
};
// Writes `bytes` of a pattern to `file` (fsync'd: the time includes reaching the
// server or disk), drops the cached pages (posix_fadvise DONTNEED) so the read
// comes from the filesystem, reads it back, verifies it and unlinks the file.
FsStream measure_stream(const std::filesystem::path& file, std::uint64_t bytes);

}  // namespace gpuaccept::smoke
