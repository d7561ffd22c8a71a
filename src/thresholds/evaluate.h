// The rule engine: every rule of a threshold set against every record it applies to.
// A pure function of its inputs, so it is unit-tested with hand-made records.
#pragma once

#include <vector>

#include "results/record.h"
#include "thresholds/gpu_facts.h"
#include "thresholds/rule_verdict.h"
#include "thresholds/threshold_set.h"

namespace gpuaccept {

// One verdict per rule, record and demand (min, max, line rate, fleet), in rule order; one
// NoData verdict for a rule no record matched. Fleet checks compare a record with
// the median of its peers (same phase, test, metric and params; other rank, node or
// GPU); a record without peers is not compared. A floor that assumes a GPU
// (Rule::assumes) judges a record only when `gpus` has each of its GPUs and each meets
// the assumption; else its verdict is NotApplied, saying why.
std::vector<RuleVerdict> evaluate(const ThresholdSet& thresholds, const std::vector<Record>& records,
                                  const GpuFactsIndex& gpus = {});

}  // namespace gpuaccept
