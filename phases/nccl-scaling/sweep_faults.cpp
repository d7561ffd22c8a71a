// How the sweep ends after a fault (a rank dead or hung, an NCCL error): one FAIL naming the
// ranks that did not arrive, every communicator aborted, a checkpoint, a bounded final gather;
// and the watchdog's last resort when the main thread stays stuck.
#include "nccl-scaling/sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "common/log.h"
#include "nccl-scaling/sweep_internal.h"

namespace gpuaccept::nccl_scaling {

void Sweep::handle_fault(const Fault& f) {
  if (rt_) rt_->acknowledge_fault();
  log_error("nccl-scaling stops: {}", f.what());
  if (rt_) {
    auto g = rt_->guard({"aborting the NCCL communicators after a fault", {}, -1}, 30);
    rt_->abort_all();
    if (f.kind() != Fault::Kind::Stopped)
      rt_->board().raise_abort(fmt::format("rank {} ({}): {}", rank_, world_.hostname(), f.what()));
  }

  // Name the ranks that did not arrive. Every rank that noticed has the same view, so the
  // first rank that did arrive records the failure, and the report gets one FAIL.
  const std::vector<int> members = f.context().members.empty() ? everyone() : f.context().members;
  const long long target = f.context().target;
  std::vector<Laggard> laggards;
  bool records = f.kind() != Fault::Kind::Stopped;
  if (rt_ && target >= 0) {
    const auto board = rt_->board().read(members);
    // Dead: silent for two heartbeat periods (a live rank in a long wait beats every second).
    laggards = find_laggards(board, members, target, unix_now(), 2 * opts_.heartbeat_s + 1);
    std::erase_if(laggards, [&](const Laggard& l) { return l.rank == rank_; });  // my own line may lag
    int first = first_arrived(board, members, target);
    if (std::find(members.begin(), members.end(), rank_) != members.end() && (first < 0 || rank_ < first)) first = rank_;
    records = records && first == rank_;
    if (!records && f.kind() != Fault::Kind::Stopped) log_error("rank {} records this failure", first);
  }
  const std::string who = describe_fault_laggards(laggards, f.waited_s(), 2 * opts_.heartbeat_s + 1,
                                                  [this](long long p) { return describe_progress(p); });
  // "all_reduce float 64 MiB, scale all, out-of-place, timed batch 2: did not finish within
  // 120 s; ranks that did not arrive: 5 (node2, no heartbeat for 131 s: dead?, ...)"
  const std::string message = f.kind() == Fault::Kind::Stopped
                                  ? f.detail()
                                  : fmt::format("{}: {}; {}", f.context().what, f.detail(), who);
  log_error("{}", message);

  {
    std::unique_lock lock(results_mu_, std::defer_lock);
    if (lock.try_lock_for(std::chrono::seconds(10))) {
      if (records) {
        Record r;
        const bool in_step = step_ < static_cast<long>(steps_.size()) && target >= 0;
        r.test = in_step ? steps_[static_cast<std::size_t>(step_)].test : "phase";
        if (in_step) r.params = steps_[static_cast<std::size_t>(step_)].params;
        r.status = Status::Fail;
        r.message = message;
        ctx_.results.add(std::move(r));
      }
      if (rank_ == 0 && !pending_pairs_.empty()) {
        lock.unlock();
        judge_pending_pairs();
        lock.lock();
      }
      try {
        ctx_.results.checkpoint();
      } catch (const std::exception& e) {
        log_error("results checkpoint failed: {}", e.what());
      }
    }
  }

  // The final gather goes through World; a dead rank would keep it waiting for PMIx's
  // timeout (600 s). Every survivor gets there within seconds of the first one (the abort
  // notice), so a short one is enough; rank 0 then writes the file from the checkpoints.
  const double gather_s = std::max(30.0, 3 * last_step_s_ + 10);
  const char* current = std::getenv("GPUACCEPT_PMIX_TIMEOUT");
  if (!current || std::atof(current) <= 0 || std::atof(current) > gather_s)
    setenv("GPUACCEPT_PMIX_TIMEOUT", fmt::format("{:.0f}", gather_s).c_str(), 1);
  // Whatever happens next (a GPU that ignores the abort makes even exit() wait), the
  // process is gone a bounded time from now.
  std::thread([limit = gather_s + 120] {
    std::this_thread::sleep_for(WatchDuration(limit));
    log_error("still running {:.0f} s after a fault: ending the process", limit);
    std::_Exit(1);
  }).detach();
  if (rt_) {
    rt_->abandon();
    // Never freed: a kernel that ignored the abort would make cudaFree wait forever.
    (void)bench_.release();
    (void)sync_done_.release();
    (void)rt_.release();
  }
}

void Sweep::last_resort(const std::string& why) {
  // The watchdog thread, with the main thread stuck: record, checkpoint, take part in the
  // final gather (rank 0 writes the file), then end the process.
  std::unique_lock lock(results_mu_, std::defer_lock);
  if (lock.try_lock_for(std::chrono::seconds(5))) {
    Record r;
    const bool in_step = step_ < static_cast<long>(steps_.size());
    r.test = in_step ? steps_[static_cast<std::size_t>(step_)].test : "phase";
    if (in_step) r.params = steps_[static_cast<std::size_t>(step_)].params;
    r.status = Status::Fail;
    r.message = fmt::format("rank {} ({}): {}; the process ends here", rank_, world_.hostname(), why);
    ctx_.results.add(std::move(r));
    try {
      ctx_.results.checkpoint();
    } catch (const std::exception& e) {
      log_error("results checkpoint failed: {}", e.what());
    }
  }
  if (rt_) rt_->board().raise_abort(fmt::format("rank {} ({}): {}", rank_, world_.hostname(), why));
  setenv("GPUACCEPT_PMIX_TIMEOUT", "30", 1);
  try {
    ctx_.results.finish();
  } catch (const std::exception& e) {
    log_error("final gather failed: {}", e.what());
  }
  log_error("ending the process");
  std::_Exit(1);
}

}  // namespace gpuaccept::nccl_scaling
