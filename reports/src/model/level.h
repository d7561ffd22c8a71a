// The report's one scale of badness, merging a record's own status with the outcome
// of the rules that judged it: PASS < SKIP < WARN < FAIL < ERROR. A phase, a GPU or
// the whole run shows the worst level among its parts.
#pragma once

#include <map>
#include <string_view>

#include "results/record.h"
#include "thresholds/rule_verdict.h"

namespace gpuaccept::report {

enum class Level { Pass = 0, Skip = 1, Warn = 2, Fail = 3, Error = 4 };

Level level_of(Status s);
Level level_of(RuleOutcome o);  // NO_DATA counts as SKIP: the rule had nothing to judge
Level worst(Level a, Level b);
bool fails_run(Level l);  // FAIL or ERROR

// Counts of levels and their summary: the worst of PASS, WARN, FAIL and ERROR seen;
// SKIP only when nothing else was (a phase that passed but skipped an unsupported
// dtype has passed).
struct LevelTally {
  std::map<Level, int> counts;
  void add(Level l, int n = 1) { counts[l] += n; }
  void add(const LevelTally& other);
  int count(Level l) const;
  int total() const;
  Level summary() const;
};

std::string_view to_string(Level l);  // "PASS", "SKIP", "WARN", "FAIL", "ERROR"
std::string_view css_class(Level l);  // "pass", "skip", "warn", "fail", "error"

}  // namespace gpuaccept::report
