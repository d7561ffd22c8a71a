#include "results/child_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "common/error.h"
#include "common/log.h"
#include "results/unique_fd.h"

namespace gpuaccept {

namespace {

using Clock = std::chrono::steady_clock;

// How long to wait for a SIGKILLed child to be reaped. A child in uninterruptible
// sleep (a read from a hung NFS server) dies only when its I/O returns; waiting for
// that would hang the caller exactly as the child did.
constexpr std::chrono::seconds kReapGrace{2};

// Owns a forked child until it is reaped: destroying the owner first kills the child
// and reaps it, so no path out of run_in_child (an exception included) leaves a zombie
// or a reader still running.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      try {
        kill_and_reap();
      } catch (...) {  // waitpid failed: nothing more a destructor can do
      }
    }
  }

  // Waits until the child is reaped or `deadline` passes; true when it was reaped
  // (its wait status in status_). Polls with a short, growing sleep: a child that has
  // closed its pipe is exiting, so this is normally answered within microseconds.
  bool wait_until(Clock::time_point deadline) {
    auto pause = std::chrono::microseconds(20);
    for (;;) {
      const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
      if (r == pid_ || (r < 0 && errno == ECHILD)) {  // ECHILD: someone set SIGCHLD to SIG_IGN
        if (r < 0) status_ = 0;
        pid_ = -1;
        return true;
      }
      if (r < 0 && errno != EINTR) raise_call_error("libc", "waitpid", errno_text());
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(10000));
    }
  }

  // SIGKILL, then reap within kReapGrace; a child that still has not died is let go.
  void kill_and_reap() {
    ::kill(pid_, SIGKILL);
    if (!wait_until(Clock::now() + kReapGrace)) {
      log_error("reader process {} did not die within {} s of SIGKILL (stuck in the kernel, e.g. on a filesystem "
                "that does not answer); it is left for init to reap",
                pid_, kReapGrace.count());
      pid_ = -1;
    }
  }

  int status() const { return status_; }

 private:
  pid_t pid_;
  int status_ = 0;
};

// In the child: a crash must end the child by its signal, so that the parent can say
// which one, whatever handlers the parent process had installed.
void default_fatal_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGPIPE, SIGTERM, SIGXCPU}) {
    ::signal(sig, SIG_DFL);
    sigaddset(&set, sig);
  }
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

// In the child: it must not outlive the process that waits for it, nor spin without bound
// while that process cannot act (stopped, or killed by Slurm's time limit, scancel or Ctrl-C
// while libhdf5 loops on a damaged file: issue 39). PR_SET_PDEATHSIG kills the child when the
// thread that forked it ends; run_in_child waits on that same thread until the child is
// reaped, so that is when the process ends. RLIMIT_CPU caps its CPU time a little above the
// parent's wall-clock limit (SIGXCPU, then SIGKILL a second later), which a CPU-bound loop
// reaches only when the parent has not killed it at that limit.
void bind_to_parent(pid_t parent, std::chrono::milliseconds limit) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(kChildBodyThrew);  // parent gone already
  const rlim_t cpu_s = static_cast<rlim_t>(std::chrono::ceil<std::chrono::seconds>(limit).count()) + kCpuCapMarginSeconds;
  const rlimit cpu{cpu_s, cpu_s + 1};
  ::setrlimit(RLIMIT_CPU, &cpu);
}

[[noreturn]] void child_main(const std::function<int(int)>& body, int fd, pid_t parent,
                             std::chrono::milliseconds limit) {
  default_fatal_signals();
  bind_to_parent(parent, limit);
  int rc = kChildBodyThrew;
  try {
    rc = body(fd);
  } catch (...) {
  }
  ::_exit(rc);
}

// Reads the child's pipe until end-of-file or the deadline; false on the deadline.
bool read_until(int fd, Clock::time_point deadline, std::string& out) {
  char buf[1 << 16];
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 60000)));
    if (ready < 0 && errno != EINTR) raise_call_error("libc", "poll", errno_text());
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) raise_call_error("libc", "read", errno_text());
    if (n == 0) return true;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

ChildResult run_in_child(const std::function<int(int fd)>& body, std::chrono::milliseconds limit) {
  const auto start = Clock::now();
  const auto deadline = start + limit;
  Pipe pipe = make_pipe();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) raise_call_error("libc", "fork", errno_text());
  if (pid == 0) {
    pipe.read.reset();
    child_main(body, pipe.write.get(), parent, limit);
  }
  Child child(pid);
  pipe.write.reset();  // else the parent's own copy would keep end-of-file from coming

  ChildResult result;
  const bool finished = read_until(pipe.read.get(), deadline, result.output) && child.wait_until(deadline);
  if (!finished) {
    child.kill_and_reap();
    result.end = ChildResult::End::TimedOut;
  } else if (WIFSIGNALED(child.status())) {
    result.end = ChildResult::End::Signaled;
    result.code = WTERMSIG(child.status());
  } else {
    result.end = ChildResult::End::Exited;
    result.code = WIFEXITED(child.status()) ? WEXITSTATUS(child.status()) : 0;
  }
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return result;
}

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* desc = sigdescr_np(sig);
  return fmt::format("SIG{} ({})", abbrev ? std::string(abbrev) : std::to_string(sig), desc ? desc : "unknown signal");
}

}  // namespace gpuaccept
