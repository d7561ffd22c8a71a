// Everything the report says, as plain data: built once by build_report() from the
// loaded run, the thresholds and the optional baseline, then printed as HTML, JSON and
// JUnit XML by separate writers that decide nothing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/fabric.h"
#include "model/headline.h"
#include "model/failure_groups.h"
#include "model/good_nodes.h"
#include "model/level.h"
#include "model/node_actions.h"
#include "model/node_coverage.h"
#include "model/node_grid.h"
#include "results/record.h"
#include "run/baseline_compare.h"
#include "run/loaded_run.h"
#include "run/node_inventory.h"
#include "thresholds/rule_verdict.h"
#include "thresholds/threshold_selection.h"
#include "thresholds/threshold_set.h"

namespace gpuaccept::report {

struct PhaseSummary {
  std::string phase;
  std::vector<PhaseSource> sources;  // its files (or parts, or the missing file)
  LevelTally checks;                 // its records by status
  LevelTally rules;                  // verdicts of rules about it by outcome (NO_DATA as SKIP)
  Level status = Level::Skip;        // summary of both
};

struct BaselineComparison {
  std::string dir;
  double threshold_pct = 5.0;
  std::vector<Regression> regressions;
};

struct Report {
  std::string run_dir;
  std::string generated_at;  // ISO 8601 UTC
  std::string tool_version;
  ThresholdChoice thresholds;
  std::string thresholds_description;

  Level verdict = Level::Skip;  // summary of every check and rule verdict
  LevelTally check_counts;      // every record, by status
  LevelTally rule_counts;       // every rule verdict, by outcome

  std::vector<PhaseSummary> phases;  // known phases in pipeline order, then others
  // Phases that ran but measured nothing (every record SKIP): the run cannot accept the
  // cluster, so the verdict is INCOMPLETE rather than PASS when nothing failed.
  std::vector<std::string> skipped_phases;
  // Why the run cannot accept the cluster although nothing failed, one sentence each: every
  // skipped phase, and a run in which no GPU was measured at all (every check about a GPU
  // SKIPped: no GPU, no driver, no CUDA), whose passes are about CPUs and filesystems only.
  // Empty: the verdict may be PASS.
  std::vector<std::string> incomplete_reasons;
  std::vector<Record> checks;        // every record of the run (plus ERRORs about files, and the
                                     // report's own port_counters FAILs: model/port_counters.h)
  std::vector<RuleVerdict> verdicts;
  NodeGrid grid;
  NodeActions node_actions;  // nodes to drain and to watch (bad-nodes.txt, drain.sh)
  NodeCoverage node_coverage;  // which nodes each phase ran on; the nodes some phase missed
  GoodNodes good_nodes;        // nodes to hand back (good-nodes.txt, resume.sh) and why the others are not
  std::vector<FailureGroup> failure_groups;  // "What failed": failures that say the same thing, once each
  std::vector<HeadlineFigure> headlines;  // the figures followed from run to run (history, metrics)
  InventoryTable inventory;
  Fabric fabric;  // the fabric between nodes: ports, counters, transports, line rate, pairs
  std::optional<BaselineComparison> baseline;
  std::map<std::string, Level> rule_levels;  // worst rule outcome per record, by record_identity()
  std::map<std::string, std::vector<std::string>> rule_notes;  // messages of flagged verdicts per record

  // The worst rule outcome about this very record (PASS when no rule judged it).
  Level rule_level(const Record& r) const;
};

// Identifies a record among a run's records for cross-references (rules to records).
std::string record_identity(const Record& r);

// "FAIL" (something FAILs or ERRORs), "INCOMPLETE" (nothing does, but a phase SKIPped
// as a whole) or "PASS".
std::string_view verdict_word(const Report& r);

inline constexpr int kExitIncomplete = 3;
int exit_code(const Report& r);  // 0: PASS, 1: FAIL, kExitIncomplete: INCOMPLETE

// The order phases run in a pipeline; the report lists them so, others after.
const std::vector<std::string>& pipeline_phases();

Report build_report(const LoadedRun& run, InventoryTable inventory, const ThresholdSet& thresholds,
                    ThresholdChoice choice, const LoadedRun* baseline);

}  // namespace gpuaccept::report
