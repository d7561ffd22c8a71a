#include "common/log.h"

#include <mutex>

#include <unistd.h>

namespace gpuaccept {

LogContext& log_context() {
  static LogContext ctx = [] {
    LogContext c;
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) == 0) c.host = buf;
    return c;
  }();
  return ctx;
}

void log_line(std::FILE* stream, const std::string& text) {
  static std::mutex mu;  // the watchdog and progress threads log too
  const auto& c = log_context();
  const std::string prefix = c.rank < 0 ? fmt::format("[{} {}] ", c.phase, c.host)
                                        : fmt::format("[{} r{}/{} {}] ", c.phase, c.rank, c.size, c.host);
  std::lock_guard lock(mu);
  // A multi-line text (a table) gets the prefix on every line, so grep by rank works.
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    fmt::print(stream, "{}{}\n", prefix, std::string_view(text).substr(start, end - start));
    start = end + 1;
    if (end == text.size()) break;
  }
  std::fflush(stream);
}

}  // namespace gpuaccept
