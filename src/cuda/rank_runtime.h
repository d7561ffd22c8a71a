// What one rank of a GPU phase holds while it works over NCCL, and the only ways it
// launches and waits, so that no wait is ever unbounded (nccl-scaling and ddp both use it):
//  - the GPU (one per rank: CUDA_VISIBLE_DEVICES from Slurm, or local rank) and one stream;
//  - the NCCL communicators (world, then ncclCommSplit as the phase needs), blocking by
//    default like nccl-tests' (nonblocking: every call that returns ncclInProgress is then
//    polled to completion, with the same deadline);
//  - wait(): polls an event and the communicators' async errors until a deadline, or until
//    another rank's abort notice; throws Fault instead of hanging;
//  - a CollectiveWatchdog for calls that block inside NCCL or CUDA (connecting to a dead
//    peer): past its deadline it aborts every communicator, and past a grace period it
//    runs the last resort (record, checkpoint, gather, exit);
//  - the ArrivalBoard heartbeat and the abort-notice check, on a thread of their own: the
//    main thread never touches the shared filesystem while measuring, and a hung
//    filesystem cannot stall the watchdog either.
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda/arrival_board.h"
#include "cuda/collective_watchdog.h"
#include "cuda/cuda_handles.h"
#include "cuda/nccl_comm.h"
#include "world/world.h"

namespace gpuaccept {

// Where a wait stands: what it waits for and which ranks it needs, for the message.
struct WaitContext {
  std::string what;              // "all_reduce float 64 MiB out-of-place, scale intra_node (node1)"
  std::vector<int> members;      // world ranks this wait needs
  long long target = -1;         // the arrival progress they must have reached
};

// Why this rank stopped. Thrown by RankRuntime, handled once by the phase.
class Fault : public std::runtime_error {
 public:
  enum class Kind { Timeout, NcclError, CallFailed, Stopped };
  Fault(Kind kind, WaitContext ctx, std::string detail, double waited_s = 0);
  Kind kind() const { return kind_; }
  const WaitContext& context() const { return ctx_; }
  const std::string& detail() const { return detail_; }
  double waited_s() const { return waited_s_; }

 private:
  Kind kind_;
  WaitContext ctx_;
  std::string detail_;
  double waited_s_;
};

// The deadlines a phase sets (nccl-scaling from its command line, ddp from its config).
struct RuntimeOptions {
  double timeout_s = 120;    // per wait: a batch of collectives, a training step
  double heartbeat_s = 5;    // arrival-board heartbeat period
  bool nonblocking = false;  // ncclConfig_t.blocking = 0
  int max_ctas = 0;          // ncclConfig_t.maxCTAs (SMs a collective may hold); 0: NCCL's own
};

class RankRuntime {
 public:
  struct Setup {
    int device = 0;
    std::filesystem::path arrivals_dir;
    bool create_abort_file = false;  // rank 0
    // The watchdog's last resort, from its thread, when the main thread stays stuck.
    std::function<void(const std::string& what)> last_resort;
  };

  RankRuntime(World& world, const RuntimeOptions& options, Setup setup);
  ~RankRuntime();
  RankRuntime(const RankRuntime&) = delete;
  RankRuntime& operator=(const RankRuntime&) = delete;

  World& world() { return world_; }
  const RuntimeOptions& options() const { return options_; }
  cudaStream_t stream() const { return stream_->get(); }

  // Communicators. world_comm() is created by the constructor; split() is collective
  // over `parent` (every rank calls it); NCCL_SPLIT_NOCOLOR gives nullptr.
  NcclComm& world_comm() { return *world_comm_; }
  std::shared_ptr<NcclComm> split(NcclComm& parent, int color, int key, const WaitContext& ctx);
  void release(std::shared_ptr<NcclComm>& comm, const WaitContext& ctx);  // ncclCommDestroy, bounded
  void abort_all();  // ncclCommAbort on every communicator; any thread

  // Arrival progress (see ArrivalBoard); cheap, the watchdog thread writes it out.
  void arrive(long long progress) { progress_.store(progress); }
  long long progress() const { return progress_.load(); }
  ArrivalBoard& board() { return board_; }
  CollectiveWatchdog& watchdog() { return *watchdog_; }
  // Another rank's abort notice, once the watchdog thread has read one.
  std::optional<std::string> abort_notice() const;
  // The main thread has taken over after a fault: the watchdog no longer needs to end the
  // process for it when an abort notice arrives.
  void acknowledge_fault() { fault_acknowledged_ = true; }

  // A NCCL call's result: ncclInProgress is waited out, other errors throw Fault.
  void check(ncclResult_t rc, ncclComm_t comm, const WaitContext& ctx, const char* call);
  // Waits until `event` completed, polling the communicators' async errors; `timeout_s`
  // from now. Throws Fault on timeout, NCCL error or abort notice.
  void wait(cudaEvent_t event, const std::vector<ncclComm_t>& comms, const WaitContext& ctx, double timeout_s);
  // Arms the watchdog for a region of host calls that may block (launches, splits).
  WatchdogScope guard(const WaitContext& ctx, double timeout_s);

  // The normal end: every communicator destroyed (bounded by the watchdog), then the
  // watchdog thread stops.
  void shutdown();

  // After a fault: stop the watchdog thread, and never free GPU memory or streams (a kernel
  // that ignored the abort would make cudaFree wait forever). The process exits soon after.
  void abandon();

 private:
  World& world_;
  RuntimeOptions options_;
  Setup setup_;
  std::unique_ptr<CudaStream> stream_;
  std::unique_ptr<NcclComm> world_comm_;

  std::mutex comms_mu_;
  std::vector<std::weak_ptr<NcclComm>> comms_;  // splits, for abort_all

  ArrivalBoard board_;
  std::atomic<long long> progress_{-1};
  long long written_progress_ = -2;
  WatchTime last_write_{};
  WatchTime last_abort_check_{};
  mutable std::mutex notice_mu_;
  std::optional<std::string> notice_;
  std::atomic<bool> notice_seen_{false};
  WatchTime notice_at_{};
  std::atomic<bool> fault_acknowledged_{false};
  std::atomic<bool> last_resort_taken_{false};
  std::unique_ptr<CollectiveWatchdog> watchdog_;
  // Set by the watchdog's tick: the main thread has been in one guarded region this long.
  std::atomic<double> waiting_s_{0};
  std::mutex heartbeat_mu_;
  std::condition_variable heartbeat_cv_;
  bool heartbeat_stop_ = false;
  std::thread heartbeat_;

  void init_comm();  // the constructor's second half: the stream, the world communicator
  void beat();  // one heartbeat-thread round: write the board, read the abort notice
  void stop_threads();
  void take_last_resort(const std::string& why);
  [[noreturn]] void raise_wait_failure(Fault::Kind kind, const WaitContext& ctx, std::string detail,
                                       double waited_s = 0);
  void wait_ready(ncclComm_t comm, const WaitContext& ctx);
};

// Seconds since the epoch (the heartbeat clock, comparable across nodes with NTP).
double unix_now();

}  // namespace gpuaccept
