// Judging the pairwise tests: a pair whose bus bandwidth is more than pct % below the
// median of all pairs of its kind fails, naming the pair; an end (node or GPU) that is in
// most of the slow pairs it took part in is named as the likely culprit. Pure, so the
// thresholds and the matrix text are unit-tested.
#pragma once

#include <string>
#include <vector>

#include "results/record.h"

namespace gpuaccept::nccl_scaling {

struct PairResult {
  std::string node;   // gpu_pair: the host; node_pair: ""
  std::string a, b;   // the pair's ends: GPU indices or hostnames
  int ranks = 0;
  std::string transport;
  bool measured = false;
  double busbw = 0;   // GB/s
  long long wrong = 0;  // wrong elements in the verification run
  std::string error;  // why it was not measured
};

struct PairVerdict {
  Status status = Status::Pass;
  std::string message;
};

// One verdict per result, in order. `median` receives the median of the measured pairs.
std::vector<PairVerdict> judge_pairs(const std::vector<PairResult>& results, double outlier_pct, double* median);

// A matrix of busbw (GB/s) with `labels` on both axes, "*" marking failed pairs; above
// 32 labels only the failed pairs are listed.
std::string format_pair_matrix(const std::vector<std::string>& labels, const std::vector<PairResult>& results,
                               const std::vector<PairVerdict>& verdicts);

}  // namespace gpuaccept::nccl_scaling
