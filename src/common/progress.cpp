#include "common/progress.h"

#include <cmath>

#include "common/log.h"

namespace gpuaccept {

Progress::Progress(int total_steps) : total_(total_steps), start_(std::chrono::steady_clock::now()) {}

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::step(const std::string& what) {
  ++done_;
  const double elapsed = elapsed_s();
  const double left = done_ > 0 ? elapsed / done_ * (total_ - done_) : 0.0;
  log_rank0("step {}/{} {}: {:.1f}s elapsed, ~{:.1f}s left", done_, total_, what, elapsed, left);
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  if (std::fabs(bytes - std::round(bytes)) < 1e-9) return fmt::format("{:.0f} {}", bytes, units[u]);
  return fmt::format("{:.2f} {}", bytes, units[u]);
}

}  // namespace gpuaccept
