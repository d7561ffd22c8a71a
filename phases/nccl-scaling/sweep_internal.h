// The Sweep class behind run_nccl_scaling(), in four files: sweep.cpp (the run, its steps and
// the collective scales), sweep_setup.cpp (devices, plan, environment), pair_sweep.cpp
// (pairwise isolation) and sweep_faults.cpp (the way out after a fault).
#pragma once

#include <memory>
#include <optional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/progress.h"
#include "config/fabric_config.h"
#include "nccl-scaling/bench.h"
#include "nccl-scaling/line_rate.h"
#include "nccl-scaling/nccl_log.h"
#include "nccl-scaling/options.h"
#include "nccl-scaling/pairs.h"
#include "nccl-scaling/plan.h"
#include "cuda/rank_info.h"
#include "cuda/rank_runtime.h"
#include "nccl-scaling/table.h"
#include "phase/phase_runner.h"

namespace gpuaccept::nccl_scaling {

// One step of the plan: what every rank does at the same time.
struct StepInfo {
  std::string name;  // "all_reduce float 64 MiB intra_node"
  std::string test;  // the record test a failure in this step is filed under
  Params params;
};

class Sweep {
 public:
  Sweep(PhaseContext& ctx, Options options);
  void run();

 private:
  PhaseContext& ctx_;
  Options opts_;
  World& world_;
  const int rank_;
  FabricConfig fabric_;
  NcclLog nccl_log_;  // set up before any NCCL call: NCCL reads NCCL_DEBUG* at its first
  Topology topo_;
  std::vector<RankInfo> infos_;
  NcclNetEnv net_env_;
  std::vector<std::size_t> sizes_;
  std::size_t pair_bytes_ = 0;
  std::size_t buffer_bytes_ = 0;
  std::vector<StepInfo> steps_;
  std::unique_ptr<RankRuntime> rt_;
  std::unique_ptr<SweepBuffers> buffers_;
  std::unique_ptr<Bench> bench_;
  std::unique_ptr<Progress> progress_;
  std::unique_ptr<CudaEvent> sync_done_;  // the end-of-step sync and the pair rounds' gather
  std::timed_mutex results_mu_;  // the watchdog's last resort writes records too
  long step_ = 0;
  WatchTime step_started_{};
  double last_step_s_ = 0;
  WaitContext current_;
  WatchTime last_checkpoint_{};
  bool dirty_ = false;
  // node/gpu pair results, kept by rank 0 until the pair scale is judged
  Scale pending_scale_ = Scale::NodePair;
  std::vector<PairResult> pending_pairs_;

  // setup (sweep.cpp)
  bool check_devices();
  void plan_steps();
  void publish_environment();
  std::string describe_progress(long long progress) const;
  std::vector<int> everyone() const;

  // records
  void add(Record r);
  void job_record(const std::string& test, Status status, const std::string& message, Params params,
                  const std::string& node = "");
  void record_skips(const std::string& reason, Params extra = {});
  void checkpoint_if_due(bool force);

  // steps
  void begin_step(const WaitContext& ctx);
  void end_step(bool world_sync);
  void world_sync();
  // Every rank's 4 doubles to every rank over the world communicator; returns rank r's at
  // [4r, 4r+4) of SweepBuffers::stats_host() + 4. Also the step's sync.
  const double* world_gather(const double (&mine)[4], const WaitContext& ctx);
  std::vector<int> gpu_index_of_rank() const;
  void run_collective_scale(Scale scale);
  // budget_reduced: the scale's budget cut the row to one timed operation (param budget: reduced).
  void record_row(const Collective& c, Dtype dtype, Scale scale, const Group& group, const std::string& transport,
                  const LineRate* line_rate, bool budget_reduced, const RowResult& r, std::vector<TableRow>& table);
  // A size the scale's time budget left out (scale_budget.h): a SKIP, logged once per sweep.
  void record_budget_skip(const Collective& c, Dtype dtype, Scale scale, const Group& group, const std::string& transport,
                          std::size_t size, const std::string& reason);
  std::set<std::string> budget_logged_;
  // The line rate a group spanning nodes can drive between them (line_rate.h); nullopt within a node.
  std::optional<LineRate> line_rate_of_group(const Group& group) const;
  // After the sweep: what NCCL logged on every rank, judged per scale across nodes (transport_judge.h).
  void judge_transports();

  // each node through its own HCAs (sweep_hca_loopback.cpp, hca_loopback.h)
  void run_hca_loopback();

  // pairwise (pair_sweep.cpp)
  void run_pair_scale(Scale scale);
  void judge_pending_pairs();

  // faults
  void handle_fault(const Fault& fault);
  void last_resort(const std::string& why);
  std::string transport_of(const std::vector<int>& members) const;
};

}  // namespace gpuaccept::nccl_scaling
