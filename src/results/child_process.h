// Running a piece of this program in a forked child with a time limit, so that a crash
// or an endless loop in it (libhdf5 on a damaged file: SIGSEGV in H5HG_read, or a loop
// in its metadata cache) costs the caller one answer and not the whole process. The
// child answers through a pipe; the parent never runs the risky code itself.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace gpuaccept {

struct ChildResult {
  enum class End { Exited, Signaled, TimedOut };
  End end = End::Exited;
  int code = 0;        // Exited: the exit status; Signaled: the signal's number
  std::string output;  // everything the child wrote to its pipe
  std::chrono::milliseconds elapsed{0};
};

// The exit status of a child whose body threw (EX_SOFTWARE).
inline constexpr int kChildBodyThrew = 70;

// The child's CPU-time cap: the wall-clock limit, rounded up, plus this (RLIMIT_CPU).
inline constexpr long kCpuCapMarginSeconds = 2;

// Forks. The child resets the fatal signals to their defaults, is bound to this process
// (it gets SIGKILL when the thread that forked it ends, PR_SET_PDEATHSIG: this call's
// thread, which waits for it, so in effect when this process is killed; and it may use
// `limit` plus kCpuCapMarginSeconds of CPU time, RLIMIT_CPU), runs
// body(fd), fd being the write end of a pipe to the parent, and _exits with what body
// returns (without running atexit handlers or flushing stdio buffers that are the parent's
// to flush). The parent collects what the child writes until the child exits or `limit`
// has passed; then it kills the child (SIGKILL). Either way the child is reaped before this
// returns, except one the kernel does not let die (stuck in I/O on a filesystem that does
// not answer): that one is left to init once this process exits.
// Throws CallError when the pipe or the fork cannot be made.
ChildResult run_in_child(const std::function<int(int fd)>& body, std::chrono::milliseconds limit);

// "SIGSEGV (Segmentation fault)".
std::string signal_text(int sig);

// Writes all of `text` to fd (retrying short writes); false when the fd refused it.
bool write_all(int fd, const std::string& text);

}  // namespace gpuaccept
