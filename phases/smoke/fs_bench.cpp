#include "smoke/fs_bench.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "smoke/random_fill.h"

namespace gpuaccept::smoke {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

std::string fail(const char* what, const fs::path& p) { return fmt::format("{} {}: {}", what, p.string(), std::strerror(errno)); }

constexpr std::size_t kChunk = 4u << 20;  // 4 MiB per write/read call

}  // namespace

FsMetadata measure_metadata(const fs::path& dir, int files) {
  FsMetadata m;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    m.error = fmt::format("mkdir {}: {}", dir.string(), ec.message());
    return m;
  }
  std::vector<fs::path> paths;
  for (int i = 0; i < files; ++i) paths.push_back(dir / fmt::format("f{:05d}", i));
  auto t = Clock::now();
  for (const auto& p : paths) {
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && m.error.empty()) m.error = fail("create", p);
    if (fd >= 0) ::close(fd);
  }
  m.create_us = us_since(t) / files;
  t = Clock::now();
  for (const auto& p : paths) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0 && m.error.empty()) m.error = fail("stat", p);
  }
  m.stat_us = us_since(t) / files;
  t = Clock::now();
  for (const auto& p : paths)
    if (::unlink(p.c_str()) != 0 && m.error.empty()) m.error = fail("unlink", p);
  m.unlink_us = us_since(t) / files;
  fs::remove(dir, ec);
  return m;
}

FsStream measure_stream(const fs::path& file, std::uint64_t bytes) {
  FsStream s;
  std::vector<std::uint64_t> chunk(kChunk / 8);
  const std::uint64_t seed = 0xf5f5;
  auto fill = [&](std::uint64_t offset_words) {
    for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = pattern_word(seed, offset_words + i);
  };

  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    s.error = fail("create", file);
    return s;
  }
  double write_us = 0;
  for (std::uint64_t done = 0; done < bytes && s.error.empty();) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, bytes - done));
    fill(done / 8);  // generating data is not part of the timed write
    const auto t = Clock::now();
    if (::write(fd, chunk.data(), n) != static_cast<ssize_t>(n)) s.error = fail("write", file);
    write_us += us_since(t);
    done += n;
  }
  const auto t_sync = Clock::now();
  if (s.error.empty() && ::fsync(fd) != 0) s.error = fail("fsync", file);
  write_us += us_since(t_sync);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  s.write_gbs = s.error.empty() ? static_cast<double>(bytes) / write_us / 1e3 : 0;

  if (s.error.empty()) {
    fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) s.error = fail("open", file);
    double read_us = 0;
    for (std::uint64_t done = 0; fd >= 0 && done < bytes && s.error.empty();) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, bytes - done));
      const auto t = Clock::now();
      const ssize_t got = ::read(fd, chunk.data(), n);
      read_us += us_since(t);
      if (got != static_cast<ssize_t>(n)) {
        s.error = got < 0 ? fail("read", file) : fmt::format("read {}: short read at byte {}", file.string(), done);
        break;
      }
      for (std::size_t i = 0; i < n / 8; ++i)
        if (chunk[i] != pattern_word(seed, done / 8 + i)) {
          s.error = fmt::format("read {}: byte {} differs from what was written", file.string(), done + i * 8);
          break;
        }
      done += n;
    }
    if (fd >= 0) ::close(fd);
    s.read_gbs = s.error.empty() ? static_cast<double>(bytes) / read_us / 1e3 : 0;
  }
  ::unlink(file.c_str());
  return s;
}

}  // namespace gpuaccept::smoke
