#include "cuda/rank_runtime.h"

#include <cstring>

#include <fmt/format.h>

#include "common/log.h"
#include "cuda/cuda_check.h"

namespace gpuaccept {

namespace {

// The watchdog steps in only when the main thread missed its own deadline by this much
// (it handles its deadlines itself: polling, abort, bookkeeping).
constexpr double kWatchdogSlackS = 30;
constexpr double kWatchdogGraceS = 30;
// How often the abort file is read: every second while waiting long, else now and then,
// so a rank stuck outside any wait (hung in a CUDA call) still learns the job is over.
constexpr double kNoticePollLongWaitS = 1;
constexpr double kNoticePollIdleS = 5;
// A rank whose main thread has not reacted to an abort notice this long ends itself.
constexpr double kNoticeGraceS = 10;

WatchTime after(double seconds) {
  return WatchClock::now() + std::chrono::duration_cast<WatchClock::duration>(WatchDuration(seconds));
}

}  // namespace

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Fault::Fault(Kind kind, WaitContext ctx, std::string detail, double waited_s)
    : std::runtime_error(fmt::format("{}: {}", ctx.what, detail)),
      kind_(kind),
      ctx_(std::move(ctx)),
      detail_(std::move(detail)),
      waited_s_(waited_s) {}

RankRuntime::RankRuntime(World& world, const RuntimeOptions& options, Setup setup)
    : world_(world),
      options_(options),
      setup_(std::move(setup)),
      board_(setup_.arrivals_dir, world.rank(), world.hostname()) {
  GPUACCEPT_CUDA_CHECK(cudaSetDevice(setup_.device));
  board_.prepare(setup_.create_abort_file);
  world_.barrier();  // the abort file exists before any rank reads it (no NFS negative lookup)

  CollectiveWatchdog::Hooks hooks;
  hooks.on_tick = [this](const CollectiveWatchdog::TickInfo& info) {
    waiting_s_ = info.armed ? info.armed_for.count() : 0.0;
  };
  hooks.on_overrun = [this](const std::string& what) {
    log_error("still inside '{}' {:.0f} s past its deadline: aborting every NCCL communicator", what, kWatchdogSlackS);
    abort_all();
    board_.raise_abort(fmt::format("rank {} ({}): stuck in {}", world_.rank(), world_.hostname(), what));
  };
  hooks.on_stuck = [this](const std::string& what) {
    take_last_resort(fmt::format("{} did not return {:.0f} s after its communicators were aborted", what,
                                 kWatchdogGraceS));
  };
  CollectiveWatchdog::Options wopts;
  wopts.grace = WatchDuration(kWatchdogGraceS);
  watchdog_ = std::make_unique<CollectiveWatchdog>(wopts, std::move(hooks));
  watchdog_->start();
  heartbeat_ = std::thread([this] {
    std::unique_lock lk(heartbeat_mu_);
    while (!heartbeat_stop_) {
      lk.unlock();
      beat();
      lk.lock();
      heartbeat_cv_.wait_for(lk, std::chrono::milliseconds(100), [this] { return heartbeat_stop_; });
    }
  });

  // From here on the threads run: a failure must stop them before the exception leaves the
  // constructor (no destructor runs then, and a joinable std::thread would terminate us).
  try {
    init_comm();
  } catch (...) {
    stop_threads();
    throw;
  }
}

void RankRuntime::init_comm() {
  stream_ = std::make_unique<CudaStream>();

  // The world communicator: rank 0's unique id through World (PMIx), as NcclComm does,
  // but with our config (blocking or not).
  ncclUniqueId id{};
  if (world_.rank() == 0) GPUACCEPT_NCCL_CHECK(ncclGetUniqueId(&id));
  const Bytes b = world_.broadcast(std::as_bytes(std::span(&id, 1)), 0);
  std::memcpy(&id, b.data(), sizeof id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = options_.nonblocking ? 0 : 1;
  if (options_.max_ctas > 0) config.maxCTAs = options_.max_ctas;  // ncclCommSplit's children inherit it
  std::vector<int> everyone(static_cast<std::size_t>(world_.size()));
  for (int r = 0; r < world_.size(); ++r) everyone[static_cast<std::size_t>(r)] = r;
  const WaitContext ctx{"NCCL initialisation of the world communicator", everyone, -1};
  ncclComm_t comm = nullptr;
  ncclResult_t rc;
  {
    auto g = guard(ctx, options_.timeout_s);
    rc = ncclCommInitRankConfig(&comm, world_.size(), id, world_.rank(), &config);
  }
  world_comm_ = std::make_unique<NcclComm>(comm);
  check(rc, comm, ctx, "ncclCommInitRankConfig");
}

RankRuntime::~RankRuntime() { stop_threads(); }

void RankRuntime::stop_threads() {
  if (watchdog_) watchdog_->stop();
  {
    std::lock_guard lock(heartbeat_mu_);
    heartbeat_stop_ = true;
  }
  heartbeat_cv_.notify_all();
  if (heartbeat_.joinable()) {
    // The last resort runs on this thread and ends the process there; never join itself.
    if (std::this_thread::get_id() == heartbeat_.get_id()) heartbeat_.detach();
    else heartbeat_.join();
  }
}

void RankRuntime::shutdown() {
  if (world_comm_) {
    auto g = guard({"ncclCommDestroy of the world communicator", {}, -1}, options_.timeout_s);
    if (options_.nonblocking && world_comm_->get()) {
      const ncclResult_t rc = ncclCommFinalize(world_comm_->get());
      if (rc == ncclInProgress) wait_ready(world_comm_->get(), {"ncclCommFinalize of the world communicator", {}, -1});
    }
    world_comm_.reset();
  }
  stop_threads();
}

void RankRuntime::abandon() { stop_threads(); }

std::optional<std::string> RankRuntime::abort_notice() const {
  if (!notice_seen_.load()) return std::nullopt;
  std::lock_guard lock(notice_mu_);
  return notice_;
}

void RankRuntime::beat() {
  const auto now = WatchClock::now();
  const long long p = progress_.load();
  const double waiting = waiting_s_.load();
  // A heartbeat every heartbeat_s; every second during a long wait, with the current
  // progress at once, so a rank that times out reads where every live rank stands and a
  // silent one is told from a live one within two heartbeats.
  const double period = waiting >= 1.0 ? 1.0 : options_.heartbeat_s;
  if (now - last_write_ >= WatchDuration(period) || (waiting >= 1.0 && p != written_progress_)) {
    board_.write(p, unix_now());
    written_progress_ = p;
    last_write_ = now;
  }
  // Another rank's abort notice: every second while waiting long, now and then otherwise.
  const double check = waiting >= 2.0 ? kNoticePollLongWaitS : kNoticePollIdleS;
  if (!notice_seen_ && now - last_abort_check_ >= WatchDuration(check)) {
    last_abort_check_ = now;
    if (auto why = board_.abort_reason()) {
      std::lock_guard lock(notice_mu_);
      notice_ = *why;
      notice_at_ = now;
      notice_seen_ = true;
    }
  }
  // The main thread polls the notice in every wait; if it has not come round to it, it is
  // stuck somewhere no deadline covers, and this rank would keep the job step alive.
  if (notice_seen_ && !fault_acknowledged_ && now - notice_at_ >= WatchDuration(kNoticeGraceS))
    take_last_resort(fmt::format("the main thread did not stop within {:.0f} s of the abort notice \"{}\"",
                                 kNoticeGraceS, abort_notice().value_or("")));
}

void RankRuntime::take_last_resort(const std::string& why) {
  if (last_resort_taken_.exchange(true)) return;
  log_error("last resort: {}", why);
  abort_all();
  if (setup_.last_resort) setup_.last_resort(why);
}

WatchdogScope RankRuntime::guard(const WaitContext& ctx, double timeout_s) {
  return WatchdogScope(*watchdog_, ctx.what, after(timeout_s + kWatchdogSlackS));
}

void RankRuntime::raise_wait_failure(Fault::Kind kind, const WaitContext& ctx, std::string detail, double waited_s) {
  throw Fault(kind, ctx, std::move(detail), waited_s);
}

void RankRuntime::wait_ready(ncclComm_t comm, const WaitContext& ctx) {
  if (!comm) return;
  ncclResult_t state = ncclInProgress;
  const auto start = WatchClock::now();
  auto scope = guard(ctx, options_.timeout_s);
  const WaitOutcome o = poll_until(
      [&] {
        if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return PollState::Failed;
        if (state == ncclInProgress) return PollState::Pending;
        return state == ncclSuccess ? PollState::Done : PollState::Failed;
      },
      after(options_.timeout_s), [&] { return notice_seen_.load(); });
  const double waited = std::chrono::duration<double>(WatchClock::now() - start).count();
  if (o == WaitOutcome::Done) return;
  if (o == WaitOutcome::TimedOut)
    raise_wait_failure(Fault::Kind::Timeout, ctx, fmt::format("NCCL did not finish within {:.0f} s", options_.timeout_s),
                       waited);
  if (o == WaitOutcome::Stopped)
    raise_wait_failure(Fault::Kind::Stopped, ctx, "stopped: " + abort_notice().value_or("another rank gave up"), waited);
  raise_wait_failure(Fault::Kind::NcclError, ctx,
                     fmt::format("NCCL error: {}", nccl_error_text(state == ncclInProgress ? ncclInternalError : state)),
                     waited);
}

void RankRuntime::check(ncclResult_t rc, ncclComm_t comm, const WaitContext& ctx, const char* call) {
  if (rc == ncclSuccess) return;
  if (rc == ncclInProgress) {
    wait_ready(comm, ctx);
    return;
  }
  if (watchdog_->overrun())
    raise_wait_failure(Fault::Kind::Timeout, ctx,
                       fmt::format("{} did not return within {:.0f} s (its communicators were aborted)", call,
                                   options_.timeout_s + kWatchdogSlackS),
                       options_.timeout_s + kWatchdogSlackS);
  raise_wait_failure(Fault::Kind::CallFailed, ctx, fmt::format("{} failed: {}", call, nccl_error_text(rc)));
}

void RankRuntime::wait(cudaEvent_t event, const std::vector<ncclComm_t>& comms, const WaitContext& ctx, double timeout_s) {
  const auto start = WatchClock::now();
  auto scope = guard(ctx, timeout_s);
  cudaError_t cuda_error = cudaSuccess;
  ncclResult_t nccl_state = ncclSuccess;
  const WaitOutcome o = poll_until(
      [&] {
        const cudaError_t e = cudaEventQuery(event);
        if (e == cudaSuccess) return PollState::Done;
        if (e != cudaErrorNotReady) {
          cuda_error = e;
          return PollState::Failed;
        }
        // Like nccl-tests' testStreamSynchronize: an asynchronous NCCL error (a peer's
        // connection broke) ends the wait at once instead of at the deadline.
        for (ncclComm_t c : comms) {
          if (!c) continue;
          ncclResult_t state = ncclSuccess;
          const ncclResult_t rc = ncclCommGetAsyncError(c, &state);
          if (rc != ncclSuccess) state = rc;
          if (state != ncclSuccess && state != ncclInProgress) {
            nccl_state = state;
            return PollState::Failed;
          }
        }
        return PollState::Pending;
      },
      after(timeout_s), [&] { return notice_seen_.load(); });
  const double waited = std::chrono::duration<double>(WatchClock::now() - start).count();
  switch (o) {
    case WaitOutcome::Done: return;
    case WaitOutcome::TimedOut:
      raise_wait_failure(Fault::Kind::Timeout, ctx, fmt::format("did not finish within {:.0f} s", timeout_s), waited);
    case WaitOutcome::Stopped:
      raise_wait_failure(Fault::Kind::Stopped, ctx, "stopped: " + abort_notice().value_or("another rank gave up"), waited);
    case WaitOutcome::Failed:
      if (cuda_error != cudaSuccess)
        raise_wait_failure(Fault::Kind::CallFailed, ctx, fmt::format("CUDA error: {}", cudaGetErrorString(cuda_error)),
                           waited);
      raise_wait_failure(Fault::Kind::NcclError, ctx, fmt::format("NCCL error: {}", nccl_error_text(nccl_state)), waited);
  }
}

std::shared_ptr<NcclComm> RankRuntime::split(NcclComm& parent, int color, int key, const WaitContext& ctx) {
  ncclComm_t child = nullptr;
  ncclResult_t rc;
  {
    auto g = guard(ctx, options_.timeout_s);
    // config nullptr: the child inherits the parent's (blocking or not, maxCTAs).
    rc = ncclCommSplit(parent.get(), color, key, &child, nullptr);
  }
  if (rc == ncclInProgress) {
    wait_ready(parent.get(), ctx);
    wait_ready(child, ctx);
  } else {
    check(rc, parent.get(), ctx, "ncclCommSplit");
  }
  if (!child) return nullptr;
  auto comm = std::make_shared<NcclComm>(child);
  std::lock_guard lock(comms_mu_);
  std::erase_if(comms_, [](const std::weak_ptr<NcclComm>& w) { return w.expired(); });
  comms_.push_back(comm);
  return comm;
}

void RankRuntime::release(std::shared_ptr<NcclComm>& comm, const WaitContext& ctx) {
  if (!comm) return;
  if (options_.nonblocking && comm->get()) {
    // Nonblocking: finalize, wait for it, then destroy (which is then local).
    check(ncclCommFinalize(comm->get()), comm->get(), ctx, "ncclCommFinalize");
  }
  auto g = guard(ctx, options_.timeout_s);
  comm.reset();  // ncclCommDestroy
}

void RankRuntime::abort_all() {
  std::vector<std::shared_ptr<NcclComm>> alive;
  {
    std::lock_guard lock(comms_mu_);
    for (auto& w : comms_)
      if (auto c = w.lock()) alive.push_back(std::move(c));
  }
  for (auto& c : alive) c->abort();
  if (world_comm_) world_comm_->abort();
}

}  // namespace gpuaccept
