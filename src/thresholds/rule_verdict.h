// What a rule found about one record: the measured value, the bound it was held to
// (an absolute number, or a percentage off the fleet median), and a one-line message
// such as "gpa-node2 GPU 3: gemm bf16 8192^3 = 612.0 TFLOP/s < 711 (90% of 790 ...)".
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "results/record.h"
#include "thresholds/rule.h"

namespace gpuaccept {

// Ordered by severity, like Status. NotApplied: a floor that does not hold for this record's
// GPU (another SKU, form factor or power limit than it assumes, or one NVML did not report:
// thresholds/gpu_facts.h); the verdict's message says why.
enum class RuleOutcome { Pass = 0, NotApplied = 1, NoData = 2, Warn = 3, Fail = 4 };

// Which of a rule's demands a verdict is about.
enum class RuleCheck { Min, Max, FleetBelow, FleetAbove, LineRate, NoData };

std::string_view to_string(RuleOutcome o);  // "PASS", "NOT_APPLIED", "NO_DATA", "WARN", "FAIL"
// "min", "max", "fleet_below_median", "fleet_above_median", "min_line_rate_fraction", "no_data"
std::string_view to_string(RuleCheck c);

struct RuleVerdict {
  Rule rule;
  RuleCheck check = RuleCheck::NoData;
  RuleOutcome outcome = RuleOutcome::NoData;
  std::optional<Record> record;  // absent for NoData: no record matched the rule
  double measured = std::numeric_limits<double>::quiet_NaN();
  double bound = std::numeric_limits<double>::quiet_NaN();         // the value the measurement was held to
  double fleet_median = std::numeric_limits<double>::quiet_NaN();  // fleet checks: the peers' median
  double line_rate_gbps = std::numeric_limits<double>::quiet_NaN(); // line-rate checks: the record's, Gb/s
  int peers = 0;                                                   // fleet checks: how many peers
  std::string message;
  std::string not_applied_because;  // NotApplied: why the floor does not hold for this record's GPUs

  bool flagged() const { return outcome == RuleOutcome::Warn || outcome == RuleOutcome::Fail; }
};

}  // namespace gpuaccept
