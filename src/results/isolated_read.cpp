#include "results/isolated_read.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <new>
#include <string_view>

#include <fmt/format.h>

#include "common/error.h"
#include "results/child_process.h"
#include "results/hdf5_handle.h"
#include "results/result_file_wire.h"
#include "results/utf8.h"

namespace gpuaccept {
namespace fs = std::filesystem;

namespace {

// The child's answer: one of these tags, then the file (result_file_wire.h) or the error's text.
constexpr std::string_view kFileTag = "file\n";
constexpr std::string_view kErrorTag = "error\n";

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

std::uint64_t mapped_bytes_now() {
  std::uint64_t pages = 0;
  std::ifstream("/proc/self/statm") >> pages;
  return pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

// What the reader may map beyond what this process already has. A damaged dataspace
// can claim billions of records, and the reader would take a login node's memory before
// failing; with a cap it fails at once (std::bad_alloc). A good file needs a few times
// its size (HDF5's rows, the records, their encoding), far below this.
std::uint64_t memory_allowance(const fs::path& path) {
  std::error_code ec;
  const std::uint64_t size = fs::file_size(path, ec);
  return std::max<std::uint64_t>(4 * kGiB, ec ? 0 : 64 * size);
}

void limit_child(std::uint64_t allowance) {
  // A damaged file is expected to crash the reader now and then: no core file for it.
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0) {
    const rlim_t want = mapped_bytes_now() + allowance;
    if (as.rlim_cur == RLIM_INFINITY || as.rlim_cur > want) as.rlim_cur = want;
    ::setrlimit(RLIMIT_AS, &as);
  }
}

// The child's whole life: read, answer, exit.
int answer(int fd, const fs::path& path, ResultFile (*reader)(const fs::path&)) {
  const std::uint64_t allowance = memory_allowance(path);
  limit_child(allowance);
  std::string text;
  try {
    text = std::string(kFileTag) + encode_result_file(reader(path));
  } catch (const std::bad_alloc&) {
    text = std::string(kErrorTag) + fmt::format("the reader ran out of memory ({} GiB allowed; a damaged size field?)",
                                                allowance / kGiB);
  } catch (const std::exception& e) {
    text = std::string(kErrorTag) + e.what();
  }
  return write_all(fd, text) ? 0 : 1;
}

std::string seconds_text(std::chrono::milliseconds d) { return fmt::format("{:g} s", d.count() / 1000.0); }

}  // namespace

std::chrono::milliseconds read_time_limit() {
  const char* text = std::getenv("GPUACCEPT_READ_TIMEOUT");
  if (!text || !*text) return kDefaultReadTimeLimit;
  char* end = nullptr;
  const double s = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(s) || s <= 0 || s > 86400)
    throw InputError(fmt::format("GPUACCEPT_READ_TIMEOUT='{}': expected the seconds one results file may take to "
                                 "read, a number > 0 (at most 86400)",
                                 text));
  return std::max(std::chrono::milliseconds(1), std::chrono::milliseconds(std::llround(s * 1000)));
}

ResultFile read_result_file_isolated(const fs::path& path, std::chrono::milliseconds limit,
                                     ResultFile (*reader)(const fs::path&)) {
  const std::string name = path.string();
  // libhdf5 set up once here, before the fork, and not in every child: its start-up is
  // most of what a small file costs. No file is ever opened on this side.
  hdf5_quiet();
  const ChildResult c = run_in_child([&](int fd) { return answer(fd, path, reader); }, limit);
  if (c.end == ChildResult::End::TimedOut)
    throw InputError(fmt::format("results file {}: the reader did not finish within {} and was killed (libhdf5 "
                                 "looping on damaged metadata, or a filesystem that does not answer; the limit is "
                                 "GPUACCEPT_READ_TIMEOUT)",
                                 name, seconds_text(limit)));
  if (c.end == ChildResult::End::Signaled)
    throw InputError(fmt::format("damaged results file {}: the reader was killed by {}{}", name, signal_text(c.code),
                                 c.code == SIGKILL ? " (by someone else: out of memory?)" : " inside libhdf5"));
  const std::string_view out = c.output;
  if (out.starts_with(kFileTag)) {
    try {
      return decode_result_file(out.substr(kFileTag.size()));
    } catch (const std::exception& e) {
      throw InputError(fmt::format("results file {}: the reader's answer could not be decoded ({})", name, e.what()));
    }
  }
  if (out.starts_with(kErrorTag)) {
    const std::string what = valid_utf8(out.substr(kErrorTag.size()));  // may quote a damaged string
    // read_result_file's errors name the file; others (a malformed params field) do not.
    throw InputError(what.find(name) != std::string::npos ? what
                                                          : fmt::format("results file {}: unreadable ({})", name, what));
  }
  throw InputError(fmt::format("results file {}: the reader exited with code {} and no answer", name, c.code));
}

ResultFile read_result_file_isolated(const fs::path& path, std::chrono::milliseconds limit) {
  return read_result_file_isolated(path, limit, &read_result_file);
}

ResultFileReader isolated_reader(std::chrono::milliseconds limit) {
  return [limit](const fs::path& path) { return read_result_file_isolated(path, limit); };
}

}  // namespace gpuaccept
