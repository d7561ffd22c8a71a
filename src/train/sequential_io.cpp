#include "train/sequential_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "common/error.h"
#include "results/unique_fd.h"

namespace gpuaccept::train {

namespace {

constexpr std::size_t kBlock = 16ull << 20;  // dd's bs=16M

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<std::uint64_t> pattern() {
  std::vector<std::uint64_t> block(kBlock / 8);
  for (std::size_t i = 0; i < block.size(); ++i) block[i] = 0x9e3779b97f4a7c15ull * (i + 1);
  return block;
}

[[noreturn]] void fail(const std::filesystem::path& path, const char* call, int err) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);  // never /dev/full
  raise_call_error("libc", call, fmt::format("{}: {}", path.string(), std::strerror(err)));
}

}  // namespace

double sequential_write(const std::filesystem::path& path, std::uint64_t bytes, double* fsync_s) {
  const std::vector<std::uint64_t> block = pattern();
  const auto t0 = std::chrono::steady_clock::now();
  {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0) fail(path, "open", errno);
    for (std::uint64_t done = 0; done < bytes;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, bytes - done));
      const ssize_t w = ::write(fd.get(), block.data(), n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail(path, "write", w < 0 ? errno : ENOSPC);
      done += static_cast<std::uint64_t>(w);
    }
    const auto fsync_started = std::chrono::steady_clock::now();
    if (::fsync(fd.get()) != 0) fail(path, "fsync", errno);
    (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
    if (fsync_s) *fsync_s = seconds_since(fsync_started);
  }
  return seconds_since(t0);
}

double sequential_read(const std::filesystem::path& path, std::uint64_t bytes) {
  const std::vector<std::uint64_t> block = pattern();
  std::vector<std::uint64_t> back(kBlock / 8);
  const auto t0 = std::chrono::steady_clock::now();
  {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) fail(path, "open", errno);
    (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
    for (std::uint64_t done = 0; done < bytes;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, bytes - done));
      std::size_t got = 0;
      while (got < n) {
        const ssize_t r = ::read(fd.get(), reinterpret_cast<char*>(back.data()) + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) fail(path, "read", r < 0 ? errno : EIO);
        got += static_cast<std::size_t>(r);
      }
      if (std::memcmp(back.data(), block.data(), n) != 0)
        raise_call_error("libc", "read", fmt::format("{}: the data read back differs from what was written at byte {}",
                                                     path.string(), done));
      done += n;
    }
  }
  const double s = seconds_since(t0);
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);  // never /dev/full
  return s;
}

SequentialIo sequential_write_read(const std::filesystem::path& path, std::uint64_t bytes) {
  SequentialIo io;
  io.bytes = bytes;
  io.write_s = sequential_write(path, bytes);
  io.read_s = sequential_read(path, bytes);
  return io;
}

}  // namespace gpuaccept::train
