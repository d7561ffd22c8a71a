// run_in_child: what comes back from a child that answers, crashes, loops or throws,
// and that none is ever left behind.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "results/child_process.h"

using namespace gpuaccept;
using namespace std::chrono_literals;

namespace {

// True when this process has no child, reaped or not: run_in_child left no zombie.
bool no_children_left() { return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

// Whether `pid` has ended: gone, or a zombie waiting for whoever adopted it to reap it.
bool ended(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto close = line.rfind(')');  // the command name may hold spaces and parentheses
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] == 'Z';
}

bool ends_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!ended(pid)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// A reader's parent, forked from the test: it runs run_in_child(limit) with a body that tells
// the test its pid and then spins on the CPU, as libhdf5 looping on a damaged file does.
// Returns {the parent's pid, the reader's pid}.
std::pair<pid_t, pid_t> spinning_reader(std::chrono::milliseconds limit) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t parent = ::fork();
  REQUIRE(parent >= 0);
  if (parent == 0) {
    ::close(fds[0]);
    run_in_child([&](int) {
      const pid_t me = ::getpid();
      (void)!::write(fds[1], &me, sizeof me);
      for (volatile unsigned long i = 0;; i = i + 1) {
      }
      return 0;
    }, limit);
    ::_exit(0);
  }
  ::close(fds[1]);
  pid_t reader = -1;
  REQUIRE(::read(fds[0], &reader, sizeof reader) == sizeof reader);
  ::close(fds[0]);
  return {parent, reader};
}

}  // namespace

TEST_CASE("a child's answer comes back whole, however long", "[child]") {
  const std::string big(3 << 20, 'x');  // far more than a pipe holds: the parent must read as the child writes
  const ChildResult r = run_in_child([&](int fd) { return write_all(fd, big) ? 0 : 1; }, 10s);
  CHECK(r.end == ChildResult::End::Exited);
  CHECK(r.code == 0);
  CHECK(r.output == big);
  CHECK(no_children_left());
}

TEST_CASE("a crashing child is reported by its signal, whatever handlers the parent has", "[child]") {
  // Catch2 installs its own SIGSEGV handler in this process; the child must still die by the signal.
  const ChildResult r = run_in_child([](int) { return ::raise(SIGSEGV); }, 10s);
  REQUIRE(r.end == ChildResult::End::Signaled);
  CHECK(r.code == SIGSEGV);
  CHECK_THAT(signal_text(r.code), Catch::Contains("SIGSEGV") && Catch::Contains("Segmentation fault"));
  CHECK(run_in_child([](int) { return ::raise(SIGABRT); }, 10s).code == SIGABRT);
  CHECK(no_children_left());
}

TEST_CASE("a looping child is killed at the limit", "[child]") {
  const ChildResult r = run_in_child([](int fd) {
    write_all(fd, "started");
    for (;;) ::pause();
    return 0;
  }, 300ms);
  CHECK(r.end == ChildResult::End::TimedOut);
  CHECK(r.output == "started");
  CHECK(r.elapsed >= 300ms);
  CHECK(r.elapsed < 5s);
  CHECK(no_children_left());
}

TEST_CASE("a child that closes its pipe and then hangs is killed at the limit too", "[child]") {
  const ChildResult r = run_in_child([](int fd) {
    ::close(fd);
    for (;;) ::pause();
    return 0;
  }, 300ms);
  CHECK(r.end == ChildResult::End::TimedOut);
  CHECK(no_children_left());
}

TEST_CASE("a body that throws exits with its own code", "[child]") {
  const ChildResult r = run_in_child([](int) -> int { throw std::runtime_error("no"); }, 10s);
  CHECK(r.end == ChildResult::End::Exited);
  CHECK(r.code == kChildBodyThrew);
  CHECK(run_in_child([](int) { return 3; }, 10s).code == 3);
  CHECK(no_children_left());
}

TEST_CASE("a child is bound to its parent: it dies with it, and its CPU time is capped", "[child]") {
  const ChildResult r = run_in_child([](int fd) {
    int sig = 0;
    ::prctl(PR_GET_PDEATHSIG, &sig);
    rlimit cpu{};
    ::getrlimit(RLIMIT_CPU, &cpu);
    std::ostringstream out;
    out << sig << " " << cpu.rlim_cur << " " << cpu.rlim_max;
    return write_all(fd, out.str()) ? 0 : 1;
  }, 1500ms);
  CHECK(r.end == ChildResult::End::Exited);
  // SIGKILL at the parent's death; CPU: ceil(1.5 s) + kCpuCapMarginSeconds, then SIGKILL a second on.
  CHECK(r.output == std::to_string(SIGKILL) + " 4 5");
  CHECK(no_children_left());
}

TEST_CASE("a reader whose parent is killed dies with it (issue 39)", "[child]") {
  // The report killed by Slurm's time limit, scancel or Ctrl-C while libhdf5 loops.
  const auto [parent, reader] = spinning_reader(60s);
  CHECK_FALSE(ended(reader));
  REQUIRE(::kill(parent, SIGKILL) == 0);
  REQUIRE(::waitpid(parent, nullptr, 0) == parent);
  CHECK(ends_within(reader, 5s));
  CHECK(no_children_left());
}

TEST_CASE("a reader whose parent cannot act stops at its CPU cap", "[child]") {
  // The report stopped (SIGSTOP, Ctrl-Z) while libhdf5 loops: its 1 s wall-clock limit never
  // fires, the reader's cap does, at 1 + kCpuCapMarginSeconds s of CPU time.
  const auto [parent, reader] = spinning_reader(1s);
  REQUIRE(::kill(parent, SIGSTOP) == 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK(ends_within(reader, 90s));  // 3 s of CPU: longer on a machine busy with builds
  CHECK(std::chrono::steady_clock::now() - start >= 1500ms);  // it spun until its cap, not less
  ::kill(parent, SIGKILL);
  REQUIRE(::waitpid(parent, nullptr, 0) == parent);
  CHECK(no_children_left());
}
