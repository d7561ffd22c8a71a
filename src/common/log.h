// Logging for the job log: every line is prefixed with phase, rank and host so that
// the interleaved output of many ranks in slurm-*.out stays readable, e.g.
//   [discover r0/4 gpa-node1] 3 GPUs found
#pragma once

#include <cstdio>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace gpuaccept {

struct LogContext {
  std::string phase = "gpuaccept";
  int rank = -1;
  int size = 0;
  std::string host;
};

LogContext& log_context();
void log_line(std::FILE* stream, const std::string& text);

// Every rank logs with log_info; progress and summaries come from rank 0 only (log_rank0).
template <typename... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  log_line(stdout, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_error(fmt::format_string<Args...> f, Args&&... args) {
  log_line(stderr, "ERROR " + fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void log_rank0(fmt::format_string<Args...> f, Args&&... args) {
  if (log_context().rank <= 0) log_line(stdout, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace gpuaccept
