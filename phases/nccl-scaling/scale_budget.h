// Keeps one scale's sweep within its time budget (nccl.scale_budget_s), whatever the fabric:
// on a link at 1.5 GB/s the quick profile's sizes up to 8 GiB would take an hour. Before each
// size it estimates the size's time from the previous size's measured time per operation,
// scaled by the bytes (an over-estimate where latency still dominates, never an under-one),
// and leaves the size out when the sweep's share of the budget would be exceeded. The share:
// what is left of the scale's budget over the (collective, dtype) sweeps still to run, so a
// slow collective cannot starve the next one.
//
// The sizes the report judges bandwidth at (>= judged_bytes, 256 MiB: the line-rate rules of
// docs/fabric.md) are not lost to the budget: once the sweep is cut, the first of them still
// runs, with one warm-up and one timed operation, when that fits in what is left of the scale's
// budget. Everything else left out becomes a SKIP naming the rate that made it so.
//
// Decisions use only the rows' figures (the mean over the group's ranks, gathered by NCCL), so
// every rank of a group decides alike and the steps stay in lockstep.
#pragma once

#include <cstddef>
#include <string>

#include "nccl-scaling/options.h"

namespace gpuaccept::nccl_scaling {

class ScaleBudget {
 public:
  // budget_s <= 0: no budget. `sweeps`: the (collective, dtype) sweeps the scale will run.
  ScaleBudget(double budget_s, int sweeps, std::size_t judged_bytes = std::size_t{256} << 20);

  struct Decision {
    enum class Kind { Measure, MeasureReduced, Skip } kind = Kind::Measure;
    IterPlan plan;       // what to run (Measure: the normal plan; MeasureReduced: 1 + 1 x 1)
    std::string reason;  // Skip, MeasureReduced: why, with the rate that decided it
  };

  void begin_sweep();  // a new (collective, dtype) sweep: its share of what is left
  // `placements`: 2 with in-place, else 1.
  Decision before(std::size_t bytes, const IterPlan& normal, int placements);
  // After a measured size: its plan and its time per operation (the slower placement), us.
  void after(std::size_t bytes, const IterPlan& plan, int placements, double time_us);

  double spent_s() const { return spent_s_; }

 private:
  double budget_s_;
  int sweeps_left_;
  std::size_t judged_bytes_;
  double spent_s_ = 0;        // the scale's, modelled from the measured figures
  double share_s_ = 0;        // this sweep's
  double sweep_spent_s_ = 0;  // this sweep's
  std::size_t last_bytes_ = 0;
  double last_us_ = 0;
  bool cut_ = false;
  bool judged_done_ = false;  // a size >= judged_bytes was measured in this sweep
  std::string cut_reason_;

  double estimate_s(std::size_t bytes, const IterPlan& plan, int placements) const;
};

}  // namespace gpuaccept::nccl_scaling
