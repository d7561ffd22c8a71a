// Measuring one table row (one collective, dtype and size on one communicator) the way
// nccl-tests does, so the figures compare:
//   warmup: `warmup` operations, waited for;
//   timed:  `batches` back-to-back batches of `iters` operations, one CUDA event between
//           batches and none inside them, no host synchronisation until the last; each
//           operation at a different offset in the buffers (nccl-tests' shift: no cache
//           reuse between iterations); the rank's time is the median batch / iters;
//   check:  one more operation on a NaN-poisoned output from a fresh input, and a kernel
//           that counts the elements differing from expected.h's formula;
// then the ranks' times and wrong counts are gathered over the same communicator, and
// the row's time is their mean (nccl-tests' default -a 1).
// Host-side timers and polling never enter the measured interval: the events do.
#pragma once

#include <vector>

#include "cuda/rank_runtime.h"
#include "nccl-scaling/collective.h"
#include "nccl-scaling/options.h"
#include "nccl-scaling/sweep_buffers.h"

namespace gpuaccept::nccl_scaling {

struct PlacementResult {
  bool run = false;
  double time_us = 0;    // this rank: median over batches of the time per operation
  long long wrong = -1;  // this rank's wrong output elements; -1 not checked
};

struct RankFigures {  // one rank's, after the gather
  double time_us[2] = {0, 0};  // [out-of-place, in-place]; NaN when not run
  long long wrong[2] = {-1, -1};
};

struct RowResult {
  ElemCounts counts;
  std::size_t size_bytes = 0;  // nccl-tests' size column
  IterPlan plan;
  PlacementResult mine[2];
  std::vector<RankFigures> ranks;  // by rank in the communicator
};

// Row figures for the records and the table, from the gathered per-rank ones.
struct RowFigures {
  bool run = false;
  double time_us = 0;  // mean over ranks
  double algbw = 0, busbw = 0;
  long long wrong = -1;  // total; -1 not checked
  std::vector<std::pair<int, long long>> wrong_by_rank;  // (rank in comm, count) where > 0
};
RowFigures row_figures(const Collective& c, const RowResult& r, int placement, int nranks);

class Bench {
 public:
  Bench(RankRuntime& rt, const Options& opts, SweepBuffers& buffers);

  // Called by every rank of `comm` together; `members`: world ranks by communicator rank.
  // `plan`: warm-up, iterations and batches (iter_plan(), or fewer where the scale's budget says).
  RowResult measure_row(const Collective& c, Dtype dtype, std::size_t bytes, NcclComm& comm,
                        const std::vector<int>& members, const WaitContext& ctx, const IterPlan& plan);

 private:
  RankRuntime& rt_;
  const Options& opts_;
  SweepBuffers& buf_;
  CudaEvent warm_, check_, stats_;
  std::vector<CudaEvent> marks_;

  PlacementResult measure_placement(const Collective& c, Dtype dtype, const ElemCounts& k, bool in_place,
                                    NcclComm& comm, int rank, int nranks, const IterPlan& plan, const WaitContext& ctx);
};

}  // namespace gpuaccept::nccl_scaling
