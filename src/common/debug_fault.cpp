#include "common/debug_fault.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "common/log.h"

namespace gpuaccept {

void add_debug_fault_flags(CLI::App& app, DebugFault& f) {
  app.add_option("--debug-kill-rank", f.kill_rank)->group("");
  app.add_option("--debug-hang-rank", f.hang_rank)->group("");
  app.add_option("--debug-kill-after-steps", f.after_steps)->group("");
}

void inject_debug_fault(const DebugFault& f, int rank, long steps_done, std::string_view where) {
  if (f.after_steps != steps_done) return;
  if (f.kill_rank == rank) {
    log_error("debug: SIGKILL before {}", where);
    std::fflush(nullptr);
    std::raise(SIGKILL);
  }
  if (f.hang_rank == rank) {
    log_error("debug: hanging before {} (heartbeats go on)", where);
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
}

}  // namespace gpuaccept
