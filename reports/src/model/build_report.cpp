#include <algorithm>
#include <chrono>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "model/port_counters.h"
#include "model/report.h"
#include "model/slowest_pair.h"
#include "phase/phase_runner.h"
#include "thresholds/evaluate.h"

namespace gpuaccept::report {

const std::vector<std::string>& pipeline_phases() {
  static const std::vector<std::string> kPhases = {"discover", "smoke", "nccl-scaling", "ddp", "fsdp-lora"};
  return kPhases;
}

std::string record_identity(const Record& r) {
  return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", r.phase, r.test, r.metric, encode_params(r.params),
                     r.node, r.gpu_index, r.rank);
}

Level Report::rule_level(const Record& r) const {
  const auto it = rule_levels.find(record_identity(r));
  return it == rule_levels.end() ? Level::Pass : it->second;
}

std::string_view verdict_word(const Report& r) {
  if (fails_run(r.verdict)) return "FAIL";
  return r.incomplete_reasons.empty() ? "PASS" : "INCOMPLETE";
}

int exit_code(const Report& r) {
  if (fails_run(r.verdict)) return 1;
  return r.incomplete_reasons.empty() ? 0 : kExitIncomplete;
}

namespace {

std::string utc_now() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())));
}

int phase_rank(const std::string& phase) {
  const auto& known = pipeline_phases();
  const auto it = std::find(known.begin(), known.end(), phase);
  return it == known.end() ? static_cast<int>(known.size()) : static_cast<int>(it - known.begin());
}

PhaseSummary& summary_for(std::vector<PhaseSummary>& phases, const std::string& phase) {
  auto it = std::find_if(phases.begin(), phases.end(), [&](const auto& p) { return p.phase == phase; });
  if (it != phases.end()) return *it;
  phases.push_back({});
  phases.back().phase = phase;
  return phases.back();
}

// `checks`: the run's records and the report's own checks.
std::vector<PhaseSummary> summarize_phases(const LoadedRun& run, const std::vector<Record>& checks,
                                           const std::vector<RuleVerdict>& verdicts) {
  std::vector<PhaseSummary> phases;
  for (const auto& s : run.sources) summary_for(phases, s.phase).sources.push_back(s);
  for (const auto& r : checks) summary_for(phases, r.phase).checks.add(level_of(r.status));
  for (const auto& v : verdicts) {
    // A rule that found no data says nothing about a phase that did not run.
    if (v.outcome == RuleOutcome::NoData &&
        std::none_of(phases.begin(), phases.end(), [&](const auto& p) { return p.phase == v.rule.phase; }))
      continue;
    summary_for(phases, v.rule.phase).rules.add(level_of(v.outcome));
  }
  for (auto& p : phases) {
    LevelTally all = p.checks;
    all.add(p.rules);
    p.status = all.summary();
  }
  std::stable_sort(phases.begin(), phases.end(), [](const auto& a, const auto& b) {
    const int ra = phase_rank(a.phase), rb = phase_rank(b.phase);
    return ra != rb ? ra < rb : a.phase < b.phase;
  });
  return phases;
}

}  // namespace

Report build_report(const LoadedRun& run, InventoryTable inventory, const ThresholdSet& thresholds,
                    ThresholdChoice choice, const LoadedRun* baseline) {
  Report rep;
  rep.run_dir = run.dir.string();
  rep.generated_at = utc_now();
  rep.tool_version = tool_version();
  rep.thresholds = std::move(choice);
  rep.thresholds_description = thresholds.description;
  // The report's own checks join the phases' records: each counter that rose during the run
  // is a FAIL in the phase it was first seen in (model/port_counters.h).
  PortCounterJudgement counters = judge_port_counters(run);
  rep.checks = run.records;
  rep.checks.insert(rep.checks.end(), counters.checks.begin(), counters.checks.end());
  rep.verdicts = evaluate(thresholds, rep.checks, inventory.gpus);
  name_slowest_pair(rep.verdicts, rep.checks);

  for (const auto& r : rep.checks) rep.check_counts.add(level_of(r.status));
  for (const auto& v : rep.verdicts) {
    rep.rule_counts.add(level_of(v.outcome));
    if (!v.record) continue;
    const std::string id = record_identity(*v.record);
    Level& l = rep.rule_levels[id];
    l = worst(l, level_of(v.outcome));
    if (v.flagged()) rep.rule_notes[id].push_back(fmt::format("{} {}: {}", to_string(v.outcome), v.rule.name, v.message));
  }
  LevelTally all = rep.check_counts;
  all.add(rep.rule_counts);
  // A counter that went down or cannot show a rise is a warning about the run, not a check.
  rep.verdict = worst(all.summary(), counters.level() == Level::Warn ? Level::Warn : Level::Pass);
  rep.phases = summarize_phases(run, rep.checks, rep.verdicts);
  for (const auto& p : rep.phases)
    if (p.checks.total() > 0 && p.checks.summary() == Level::Skip) {
      rep.skipped_phases.push_back(p.phase);
      rep.incomplete_reasons.push_back(fmt::format("{} measured nothing (every check SKIP)", p.phase));
    }
  // A GPU acceptance run must have measured a GPU: a record about one GPU (gpu_index >= 0)
  // that is not a SKIP. Without one, the passes are the scheduler's, the CPUs' and the
  // filesystem's, and a PASS would accept a cluster whose GPUs were never looked at.
  const auto about_a_gpu = [](const Record& r) { return r.gpu_index >= 0; };
  const auto gpu_measured = [&](const Record& r) { return about_a_gpu(r) && r.status != Status::Skip; };
  if (!rep.checks.empty() && std::none_of(rep.checks.begin(), rep.checks.end(), gpu_measured)) {
    const auto skipped = std::count_if(rep.checks.begin(), rep.checks.end(), about_a_gpu);
    rep.incomplete_reasons.push_back(
        skipped > 0 ? fmt::format("no GPU was measured: all {} checks about a GPU SKIPped", skipped)
                    : std::string("no GPU was measured: no check is about a GPU"));
  }

  // One pipeline, one node set: phases that ran on different nodes tested no node whole.
  std::vector<PhaseSource> sources;
  for (const auto& p : rep.phases) sources.insert(sources.end(), p.sources.begin(), p.sources.end());
  rep.node_coverage = node_coverage(sources);
  if (!rep.node_coverage.same_nodes())
    rep.incomplete_reasons.push_back(
        fmt::format("the phases ran on different nodes, so no node was tested by every phase: {}",
                    missed_phases_text(rep.node_coverage, 8)));

  std::vector<std::string> hosts;
  for (const auto& n : inventory.nodes) hosts.push_back(n.host);
  rep.grid = build_node_grid(hosts, rep.checks, rep.verdicts);
  rep.fabric = build_fabric(run, rep.grid.nodes, rep.checks, rep.verdicts, std::move(counters));
  rep.node_actions = node_actions(rep);
  rep.good_nodes = good_nodes(rep);
  rep.failure_groups = group_failures(rep);
  rep.headlines = headline_figures(rep.checks);
  rep.inventory = std::move(inventory);

  if (baseline) {
    rep.baseline = BaselineComparison{};
    rep.baseline->dir = baseline->dir.string();
    rep.baseline->regressions = find_regressions(baseline->records, run.records, rep.baseline->threshold_pct);
  }
  return rep;
}

}  // namespace gpuaccept::report
