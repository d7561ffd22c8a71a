// Deadlines for collective work, so that a rank that died or hung never makes the
// others wait forever. Two layers, both pure C++ (no CUDA), so the logic is unit-tested
// with a fake clock:
//
//  - poll_until(): how the main thread waits for GPU work. It polls (cudaEventQuery,
//    ncclCommGetAsyncError, ...) instead of blocking in cudaStreamSynchronize, so it can
//    give up at a deadline, notice an asynchronous NCCL error, or stop when told to.
//
//  - CollectiveWatchdog: a thread that watches the main thread from outside. The main
//    thread arms it with a deadline before a region that may block (a NCCL call that
//    connects to peers, a blocking communicator's launch, a CUDA call) and disarms it
//    after. If the main thread is still inside the region at the deadline, the watchdog
//    calls on_overrun (abort every communicator: that makes a call blocked inside NCCL
//    return); if it is still stuck `grace` later, on_stuck (the last resort: write what
//    can be written, end the process). Every tick it also calls on_tick (heartbeats).
//
// Shared by the NCCL phases (nccl-scaling, ddp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpuaccept {

using WatchClock = std::chrono::steady_clock;
using WatchTime = WatchClock::time_point;
using WatchDuration = std::chrono::duration<double>;

// Time and sleep, replaceable in tests.
struct WaitClock {
  std::function<WatchTime()> now = [] { return WatchClock::now(); };
  std::function<void(WatchDuration)> sleep = [](WatchDuration d) { std::this_thread::sleep_for(d); };
};

enum class PollState { Pending, Done, Failed };
enum class WaitOutcome { Done, Failed, TimedOut, Stopped };
const char* to_string(WaitOutcome o);

struct PollPolicy {
  // Polls back to back (yielding the core) for this long, so short waits end at once;
  // then sleeps between polls, doubling the pause up to max_pause, so a long wait costs
  // no core that NCCL's proxy thread may need. A wait's end is seen up to max_pause late:
  // at 2 ms, a ddp step took 1.9 ms more on the host's clock than on the GPU's; at 0.2 ms,
  // 0.8 ms (docs/performance-history.md).
  WatchDuration spin{0.002};
  WatchDuration first_pause{0.00005};
  WatchDuration max_pause{0.0002};
};

// Calls poll() until it returns Done (-> Done) or Failed (-> Failed), stop() returns true
// (-> Stopped), or `deadline` passes (-> TimedOut). poll() is called at least once, even
// when the deadline has already passed, so finished work is never reported as timed out.
WaitOutcome poll_until(const std::function<PollState()>& poll, WatchTime deadline,
                       const std::function<bool()>& stop = [] { return false; }, const PollPolicy& policy = {},
                       const WaitClock& clock = {});

class CollectiveWatchdog {
 public:
  struct TickInfo {
    WatchTime now;
    bool armed = false;
    WatchDuration armed_for{0};  // how long the main thread has been in the armed region
  };
  struct Hooks {
    std::function<void(const std::string& what)> on_overrun = [](const std::string&) {};
    std::function<void(const std::string& what)> on_stuck = [](const std::string&) {};
    std::function<void(const TickInfo&)> on_tick = [](const TickInfo&) {};
  };
  struct Options {
    WatchDuration tick{0.1};   // the thread's period
    WatchDuration grace{15};   // from on_overrun to on_stuck
  };

  CollectiveWatchdog(Options options, Hooks hooks, WaitClock clock = {});
  ~CollectiveWatchdog();  // stops the thread
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // Main thread: the region named `what` must be left (disarm) by `deadline`. Regions
  // nest (a guarded launch loop that waits for a nonblocking communicator): disarm
  // returns to the enclosing region and its deadline.
  void arm(std::string what, WatchTime deadline);
  void disarm();

  // True once on_overrun ran for the current region; the main thread, back from a call
  // that failed because of the abort, reads it to report a timeout instead of an error.
  bool overrun() const { return overrun_.load(); }
  std::string overrun_what() const;

  // One evaluation at `now`: what the thread does every tick. Public for tests.
  void tick(WatchTime now);

  void start();  // the background thread (idempotent)
  void stop();   // joins it (idempotent)

 private:
  enum class State { Idle, Armed, Overrun, Stuck };
  Options options_;
  Hooks hooks_;
  WaitClock clock_;
  mutable std::mutex mu_;
  struct Region {
    std::string what;
    WatchTime armed_at, deadline;
  };
  State state_ = State::Idle;
  std::vector<Region> regions_;  // innermost last
  std::string what_;             // the region that overran
  WatchTime overrun_at_{};
  std::atomic<bool> overrun_{false};

  std::mutex thread_mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

// Arms `w` for the lifetime of a scope.
class WatchdogScope {
 public:
  WatchdogScope(CollectiveWatchdog& w, std::string what, WatchTime deadline) : w_(w) {
    w_.arm(std::move(what), deadline);
  }
  ~WatchdogScope() { w_.disarm(); }
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;

 private:
  CollectiveWatchdog& w_;
};

}  // namespace gpuaccept
