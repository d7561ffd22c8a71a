// The deadline logic with a fake clock and a fake collective that never completes: no GPU,
// no sleeping in real time (but one short test of the real thread).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "cuda/collective_watchdog.h"

using namespace gpuaccept;
using namespace std::chrono_literals;

namespace {

// Time that moves only when someone sleeps.
struct FakeClock {
  WatchTime t{};
  int sleeps = 0;
  WaitClock clock() {
    return {[this] { return t; },
            [this](WatchDuration d) {
              t += std::chrono::duration_cast<WatchClock::duration>(d);
              ++sleeps;
            }};
  }
  void advance(double s) { t += std::chrono::duration_cast<WatchClock::duration>(WatchDuration(s)); }
};

WatchTime at(const FakeClock& c, double s) {
  return c.t + std::chrono::duration_cast<WatchClock::duration>(WatchDuration(s));
}

// No spinning: the fake clock moves on every poll.
PollPolicy no_spin() {
  PollPolicy p;
  p.spin = WatchDuration(0);
  p.first_pause = WatchDuration(0.001);
  p.max_pause = WatchDuration(0.5);
  return p;
}

}  // namespace

TEST_CASE("a collective that never completes times out at its deadline, not before") {
  FakeClock fc;
  const WatchTime start = fc.t;
  int polls = 0;
  const WaitOutcome o = poll_until(
      [&] {
        ++polls;
        return PollState::Pending;  // the hung collective
      },
      at(fc, 120), [] { return false; }, no_spin(), fc.clock());
  CHECK(o == WaitOutcome::TimedOut);
  const double waited = std::chrono::duration<double>(fc.t - start).count();
  CHECK(waited == Approx(120).margin(1e-6));  // the last pause is cut to the deadline
  CHECK(polls > 1);
  CHECK(fc.sleeps < 400);  // backed-off polling, not a busy loop of millions
}

TEST_CASE("completion, failure and stop end the wait at once") {
  FakeClock fc;
  int n = 0;
  CHECK(poll_until([&] { return ++n < 5 ? PollState::Pending : PollState::Done; }, at(fc, 10), [] { return false; },
                   no_spin(), fc.clock()) == WaitOutcome::Done);
  CHECK(n == 5);
  CHECK(poll_until([] { return PollState::Failed; }, at(fc, 10), [] { return false; }, no_spin(), fc.clock()) ==
        WaitOutcome::Failed);
  int polls = 0;
  CHECK(poll_until([&] { return ++polls, PollState::Pending; }, at(fc, 10), [&] { return polls >= 3; }, no_spin(),
                   fc.clock()) == WaitOutcome::Stopped);
  // Work that finished is never reported late, even past the deadline.
  CHECK(poll_until([] { return PollState::Done; }, at(fc, -1), [] { return false; }, no_spin(), fc.clock()) ==
        WaitOutcome::Done);
}

TEST_CASE("watchdog: overrun, then stuck, each once") {
  FakeClock fc;
  std::vector<std::string> overruns, stucks;
  int ticks = 0;
  CollectiveWatchdog::Hooks hooks;
  hooks.on_overrun = [&](const std::string& w) { overruns.push_back(w); };
  hooks.on_stuck = [&](const std::string& w) { stucks.push_back(w); };
  hooks.on_tick = [&](const CollectiveWatchdog::TickInfo&) { ++ticks; };
  CollectiveWatchdog::Options opts;
  opts.grace = WatchDuration(15);
  CollectiveWatchdog w(opts, hooks, fc.clock());

  w.tick(fc.t);
  CHECK(overruns.empty());  // not armed: nothing to watch
  w.arm("all_reduce 64 MiB", at(fc, 120));
  fc.advance(119);
  w.tick(fc.t);
  CHECK(overruns.empty());
  CHECK_FALSE(w.overrun());
  fc.advance(2);
  w.tick(fc.t);
  REQUIRE(overruns == std::vector<std::string>{"all_reduce 64 MiB"});
  CHECK(w.overrun());
  fc.advance(10);
  w.tick(fc.t);
  CHECK(stucks.empty());  // still within the grace period
  fc.advance(6);
  w.tick(fc.t);
  CHECK(stucks == std::vector<std::string>{"all_reduce 64 MiB"});
  fc.advance(100);
  w.tick(fc.t);
  CHECK(overruns.size() == 1);
  CHECK(stucks.size() == 1);
  CHECK(ticks == 6);
}

TEST_CASE("watchdog: leaving the region in time, or after the abort, ends it quietly") {
  FakeClock fc;
  int overruns = 0, stucks = 0;
  CollectiveWatchdog::Hooks hooks;
  hooks.on_overrun = [&](const std::string&) { ++overruns; };
  hooks.on_stuck = [&](const std::string&) { ++stucks; };
  CollectiveWatchdog w({}, hooks, fc.clock());
  w.arm("warmup", at(fc, 5));
  fc.advance(4);
  w.tick(fc.t);
  w.disarm();
  fc.advance(100);
  w.tick(fc.t);
  CHECK(overruns == 0);

  w.arm("split", at(fc, 5));
  fc.advance(6);
  w.tick(fc.t);
  CHECK(overruns == 1);
  w.disarm();  // the abort made the blocked call return
  CHECK(w.overrun());  // the main thread can still tell a timeout from an error
  fc.advance(100);
  w.tick(fc.t);
  CHECK(stucks == 0);
  w.arm("next", at(fc, 5));
  CHECK_FALSE(w.overrun());  // a new region starts clean
  w.disarm();
}

TEST_CASE("watchdog: nested regions watch the innermost deadline, then the outer one again") {
  FakeClock fc;
  std::vector<std::string> overruns;
  CollectiveWatchdog::Hooks hooks;
  hooks.on_overrun = [&](const std::string& w) { overruns.push_back(w); };
  std::vector<double> armed_for;
  hooks.on_tick = [&](const CollectiveWatchdog::TickInfo& i) { armed_for.push_back(i.armed ? i.armed_for.count() : -1); };
  CollectiveWatchdog w({}, hooks, fc.clock());
  w.arm("launch loop", at(fc, 100));
  fc.advance(1);
  w.arm("wait for communicator", at(fc, 10));
  fc.advance(11);
  w.tick(fc.t);
  CHECK(overruns == std::vector<std::string>{"wait for communicator"});
  w.disarm();
  fc.advance(10);
  w.tick(fc.t);
  CHECK(overruns.size() == 1);  // the outer deadline (100 s) has not passed
  fc.advance(80);
  w.tick(fc.t);
  CHECK(overruns.back() == "launch loop");
  w.disarm();
  w.tick(fc.t);
  REQUIRE(armed_for.size() == 4);
  CHECK(armed_for[0] == Approx(12));  // since the outermost region was armed
  CHECK(armed_for[1] == Approx(22));
  CHECK(armed_for[2] == Approx(102));
  CHECK(armed_for[3] == -1);
}

TEST_CASE("watchdog thread calls the hooks on its own") {
  std::atomic<int> ticks{0}, overruns{0};
  CollectiveWatchdog::Hooks hooks;
  hooks.on_tick = [&](const CollectiveWatchdog::TickInfo&) { ++ticks; };
  hooks.on_overrun = [&](const std::string&) { ++overruns; };
  CollectiveWatchdog::Options opts;
  opts.tick = WatchDuration(0.005);
  CollectiveWatchdog w(opts, hooks);
  w.start();
  w.start();  // idempotent
  w.arm("already late", WatchClock::now() - 1s);
  for (int i = 0; i < 400 && overruns == 0; ++i) std::this_thread::sleep_for(5ms);
  w.disarm();
  w.stop();
  w.stop();
  CHECK(overruns == 1);
  CHECK(ticks > 0);
}
