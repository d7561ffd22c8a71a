#include "cuda/collective_watchdog.h"

#include <algorithm>

namespace gpuaccept {

const char* to_string(WaitOutcome o) {
  switch (o) {
    case WaitOutcome::Done: return "done";
    case WaitOutcome::Failed: return "failed";
    case WaitOutcome::TimedOut: return "timed out";
    case WaitOutcome::Stopped: return "stopped";
  }
  return "?";
}

WaitOutcome poll_until(const std::function<PollState()>& poll, WatchTime deadline, const std::function<bool()>& stop,
                       const PollPolicy& policy, const WaitClock& clock) {
  const WatchTime start = clock.now();
  WatchDuration pause = policy.first_pause;
  for (;;) {
    switch (poll()) {
      case PollState::Done: return WaitOutcome::Done;
      case PollState::Failed: return WaitOutcome::Failed;
      case PollState::Pending: break;
    }
    if (stop()) return WaitOutcome::Stopped;
    const WatchTime now = clock.now();
    if (now >= deadline) return WaitOutcome::TimedOut;
    if (now - start < policy.spin) {
      std::this_thread::yield();
    } else {
      clock.sleep(std::min<WatchDuration>(pause, deadline - now));
      pause = std::min(pause * 2, policy.max_pause);
    }
  }
}

CollectiveWatchdog::CollectiveWatchdog(Options options, Hooks hooks, WaitClock clock)
    : options_(options), hooks_(std::move(hooks)), clock_(std::move(clock)) {}

CollectiveWatchdog::~CollectiveWatchdog() { stop(); }

void CollectiveWatchdog::arm(std::string what, WatchTime deadline) {
  std::lock_guard lock(mu_);
  if (regions_.empty()) overrun_ = false;  // a new outermost region starts clean
  regions_.push_back({std::move(what), clock_.now(), deadline});
  state_ = State::Armed;
}

void CollectiveWatchdog::disarm() {
  std::lock_guard lock(mu_);
  if (!regions_.empty()) regions_.pop_back();
  // Back in the enclosing region (if any), watched against its own deadline again.
  state_ = regions_.empty() ? State::Idle : State::Armed;
}

std::string CollectiveWatchdog::overrun_what() const {
  std::lock_guard lock(mu_);
  return what_;
}

void CollectiveWatchdog::tick(WatchTime now) {
  TickInfo info;
  info.now = now;
  bool call_overrun = false, call_stuck = false;
  std::string what;
  {
    std::lock_guard lock(mu_);
    info.armed = state_ != State::Idle && !regions_.empty();
    if (info.armed) info.armed_for = now - regions_.front().armed_at;
    if (state_ == State::Armed && info.armed && now >= regions_.back().deadline) {
      state_ = State::Overrun;
      what_ = regions_.back().what;
      overrun_at_ = now;
      overrun_ = true;
      call_overrun = true;
    } else if (state_ == State::Overrun && now - overrun_at_ >= options_.grace) {
      state_ = State::Stuck;
      call_stuck = true;
    }
    what = what_;
  }
  // Hooks run outside the lock: on_overrun aborts communicators, which lets the main
  // thread return and disarm meanwhile.
  hooks_.on_tick(info);
  if (call_overrun) hooks_.on_overrun(what);
  if (call_stuck) hooks_.on_stuck(what);
}

void CollectiveWatchdog::start() {
  std::lock_guard lock(thread_mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] {
    std::unique_lock lk(thread_mu_);
    while (!stopping_) {
      cv_.wait_for(lk, options_.tick, [this] { return stopping_; });
      if (stopping_) break;
      lk.unlock();
      tick(clock_.now());
      lk.lock();
    }
  });
}

void CollectiveWatchdog::stop() {
  {
    std::lock_guard lock(thread_mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  // The thread may be inside a hook (the last resort ends the process there); never
  // join from the watchdog thread itself.
  if (std::this_thread::get_id() == thread_.get_id()) {
    thread_.detach();
    return;
  }
  thread_.join();
}

}  // namespace gpuaccept
