// Fault injection for the GPU fault tests (tests/gpu/nccl_kill.sh, tests/gpu/ranks_on_one_gpu.sh):
// one rank dies with SIGKILL (as the OOM killer would take it) or hangs with its other threads,
// heartbeats included, still running (a kernel or a driver call that never returns). Hidden
// flags, the same in every phase that uses it; not for operators.
#pragma once

#include <string_view>

#include <CLI/CLI.hpp>

namespace gpuaccept {

struct DebugFault {
  int kill_rank = -1;
  int hang_rank = -1;
  long after_steps = -1;  // the fault strikes when this many steps have been done
};

// --debug-kill-rank, --debug-hang-rank, --debug-kill-after-steps (no help group: hidden).
void add_debug_fault_flags(CLI::App& app, DebugFault& fault);

// Called by `rank` before each step with the steps done so far: returns unless the fault is
// due here; then dies or hangs (never returns), after a log line saying so and `where`.
void inject_debug_fault(const DebugFault& fault, int rank, long steps_done, std::string_view where);

}  // namespace gpuaccept
