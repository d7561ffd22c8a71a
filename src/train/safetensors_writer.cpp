#include "train/safetensors_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "common/error.h"
#include "results/unique_fd.h"
#include "train/hash_ahead.h"

namespace gpuaccept::train {

namespace {

// One write() call at most this much: a few MiB, so that the chunk the hasher has just read
// (train/hash_ahead.h, kHashLead ahead) is still in the shared cache when write() copies it.
constexpr std::size_t kWriteChunk = 4ull << 20;
constexpr std::uint64_t kHashLead = 8ull << 20;
// Smaller tensors are hashed on the writer's thread: a thread costs more than their hash.
constexpr std::uint64_t kHashAheadFrom = 16ull << 20;

std::uint64_t element_count(const std::vector<std::int64_t>& shape) {
  std::uint64_t n = 1;
  for (const auto d : shape) {
    if (d < 0) throw std::invalid_argument("write_safetensors: negative dimension");
    n *= static_cast<std::uint64_t>(d);
  }
  return n;
}

[[noreturn]] void fail(const std::filesystem::path& path, std::string_view call, int err, std::uint64_t written,
                       std::uint64_t total) {
  raise_call_error("libc", call,
                   fmt::format("{}: {} ({} of {} bytes written)", path.string(), std::strerror(err), written, total));
}

}  // namespace

std::uint64_t xxh3_of(const void* data, std::size_t bytes) { return XXH3_64bits(data, bytes); }

WrittenFile write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                              const std::map<std::string, std::string>& metadata, std::uint64_t writeback_window) {
  const auto started = std::chrono::steady_clock::now();
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t data_bytes = 0;
  for (const TensorToWrite& t : tensors) {
    const std::uint64_t bytes = element_count(t.shape) * dtype_size(t.dtype);
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {data_bytes, data_bytes + bytes}}};
    data_bytes += bytes;
  }
  std::string text = header.dump();
  // 8 bytes of length, then the JSON padded with spaces to the data section's alignment.
  const std::uint64_t data_start = (8 + text.size() + kSafetensorsDataAlign - 1) / kSafetensorsDataAlign * kSafetensorsDataAlign;
  text.resize(data_start - 8, ' ');
  const std::uint64_t total = data_start + data_bytes;

  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) fail(path, "open", errno, 0, total);
  std::uint64_t written = 0;
  std::uint64_t writeback_from = 0;  // writeback started for [0, writeback_from)
  // Not checked: a filesystem that cannot start writeback early (EINVAL, ESPIPE) still gets the
  // fsync, which is what makes the file durable; this only moves the disk's work earlier. A
  // write error the early writeback meets (EIO) stays on the file and the fsync reports it.
  const auto start_writeback = [&]() {
    if (writeback_window == 0 || written - writeback_from < writeback_window) return;
    (void)::sync_file_range(fd.get(), static_cast<off_t>(writeback_from), static_cast<off_t>(written - writeback_from),
                            SYNC_FILE_RANGE_WRITE);
    writeback_from = written;
  };
  const auto write_all = [&](const char* p, std::size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd.get(), p, std::min(n, kWriteChunk));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = w < 0 ? errno : ENOSPC;
        std::error_code ec;
        if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);  // a partial file helps no one; never /dev/full
        fail(path, "write", err, written, total);
      }
      p += w;
      n -= static_cast<std::size_t>(w);
      written += static_cast<std::uint64_t>(w);
      start_writeback();
    }
  };
  char length[8];
  const std::uint64_t n = data_start - 8;
  std::memcpy(length, &n, 8);  // little-endian host (safetensors_reader.cpp asserts it)
  write_all(length, 8);
  write_all(text.data(), text.size());

  WrittenFile out;
  for (const TensorToWrite& t : tensors) {
    const std::uint64_t bytes = element_count(t.shape) * dtype_size(t.dtype);
    const char* p = static_cast<const char*>(t.data);
    if (bytes < kHashAheadFrom) {
      write_all(p, static_cast<std::size_t>(bytes));
      out.tensors.push_back({t.name, bytes, xxh3_of(p, static_cast<std::size_t>(bytes))});
      continue;
    }
    HashAhead hash(p, bytes, kHashLead);
    for (std::uint64_t done = 0; done < bytes;) {
      const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(bytes - done, kWriteChunk));
      write_all(p + done, chunk);
      done += chunk;
      hash.written(done);
    }
    out.tensors.push_back({t.name, bytes, hash.digest()});
  }
  const auto fsync_started = std::chrono::steady_clock::now();
  if (::fsync(fd.get()) != 0) {
    const int err = errno;
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);  // never /dev/full
    fail(path, "fsync", err, written, total);
  }
  // Written and on disk: the cached pages are clean now, so this drops them.
  (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  out.bytes = total;
  const auto done = std::chrono::steady_clock::now();
  out.write_s = std::chrono::duration<double>(done - started).count();
  out.fsync_s = std::chrono::duration<double>(done - fsync_started).count();
  return out;
}

}  // namespace gpuaccept::train
