// run_in_child: what comes back from a child that answers, crashes, loops or throws,
// and that none is ever left behind.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "results/child_process.h"

using namespace gpuaccept;
using namespace std::chrono_literals;

namespace {

// True when this process has no child, reaped or not: run_in_child left no zombie.
bool no_children_left() { return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

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
