// "What got worse": the same measurement (phase, test, metric, params, node, GPU) in
// a baseline run and in this one, where this one is more than a given percentage
// worse. Direction comes from the unit: latency and time are better lower; bandwidth,
// TFLOP/s, tokens/s and % are better higher; other units (counts, C, W) are not compared.
#pragma once

#include <vector>

#include "results/record.h"

namespace gpuaccept::report {

struct Regression {
  Record now;       // this run's record (its value: the median of its repeats)
  double baseline;  // the baseline's median for the same measurement
  double worse_pct;  // how much worse, always positive
};

enum class Better { Higher, Lower, Unknown };
Better better_direction(const Record& r);

std::vector<Regression> find_regressions(const std::vector<Record>& baseline, const std::vector<Record>& now,
                                         double threshold_pct = 5.0);

}  // namespace gpuaccept::report
