// "What failed", grouped (issue 39): failures that say the same thing are one group with a
// count and where they happened, so 8,192 GPUs failing one binding check is one row on the
// report's first screen instead of 8,192. Two failures are the same when their level, phase,
// check (the record's test and metric, or the rule and which of its demands) and message
// agree once the message's numbers and names are abstracted: every run of digits becomes
// "#", every node name of the run "<node>", every GPU UUID "<gpu>". Every record stays in
// summary.json, junit.xml and the phase's table; a group keeps its first member as the
// example and the places of all.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "model/level.h"
#include "results/record.h"
#include "thresholds/rule_verdict.h"

namespace gpuaccept::report {

struct Report;

struct FailureGroup {
  Level level = Level::Fail;
  std::string phase;
  std::string check;    // "gemm tflops", or the rule's name and demand ("gemm_fleet fleet_below_median")
  std::string pattern;  // the message abstracted: the group's key with the three above
  Record example;                         // the first member's record ...
  std::optional<RuleVerdict> verdict;     // ... and, for a rule's verdict, the verdict
  int count = 0;
  int job_level = 0;                      // members that name no node
  std::vector<std::string> nodes;         // the nodes named, each once, in the report's order
  std::map<std::string, std::set<int>> gpus;  // per node: the GPU indices named (per-GPU members)
  double min_measured = 0, max_measured = 0;  // over the members with a value
  bool measured = false;

  // "gpu[0001-1024] GPUs 0-7" (nodes sharing one GPU set are one hostlist), "job", or both.
  std::string where() const;
};

// Abstracts `message` as the grouping compares it: digits to "#", a token in `names` to
// "<node>", a GPU or MIG UUID to "<gpu>".
std::string abstract_message(std::string_view message, const std::unordered_set<std::string>& names);

// Every failure of the report (its FAIL and ERROR records, its flagged rule verdicts), in
// groups: most severe level first, within a level the most frequent first, then in the order
// the first member appears.
std::vector<FailureGroup> group_failures(const Report& report);

// The floors that did not apply (RuleOutcome::NotApplied), one group per rule and reason
// (the reason abstracted as a message is): level SKIP, check the rule's name.
std::vector<FailureGroup> group_floors_not_applied(const Report& report);

// "0-3,5": GPU indices as ranges.
std::string index_ranges(const std::set<int>& indices);

}  // namespace gpuaccept::report
