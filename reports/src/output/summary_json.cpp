#include "output/summary_json.h"

#include <ostream>
#include <sstream>

#include <fmt/format.h>

#include "output/drain_files.h"
#include "output/fabric_json.h"
#include "slurm/slurm_api.h"
#include "thresholds/record_label.h"

namespace gpuaccept::report {
using nlohmann::json;

namespace {

json number_or_null(double v) { return std::isnan(v) ? json(nullptr) : json(v); }

// {"hostlist": "gpu[01-02]", "nodes": [{"node", "problems", "first_problem"}]}.
json node_action_json(const std::vector<NodeAction>& list) {
  json nodes = json::array();
  for (const auto& a : list)
    nodes.push_back({{"node", a.node}, {"problems", a.problems}, {"first_problem", a.first_problem}});
  return {{"hostlist", hostlist_of(list)}, {"nodes", nodes}};
}

// {"hostlist", "nodes": [...], "held_back": [{"node", "why"}], "reservation", "run_ended"}.
json good_nodes_json(const GoodNodes& g) {
  json held = json::array();
  for (const auto& h : g.held_back) held.push_back({{"node", h.node}, {"why", h.why}});
  return {{"hostlist", compress_hostlist(g.nodes)}, {"nodes", g.nodes}, {"held_back", held},
          {"reservation", g.reservation}, {"run_ended", g.run_ended}};
}

// {"same_nodes", "phases": {phase: hostlist}, "missed": {node: [phases]}}.
json node_coverage_json(const NodeCoverage& c) {
  json phases = json::object();
  for (const auto& p : c.phases) phases[p.phase] = compress_hostlist(p.nodes);
  return {{"same_nodes", c.same_nodes()}, {"phases", phases}, {"missed", c.missed}};
}

json tally_json(const LevelTally& t) {
  json out = json::object();
  for (Level l : {Level::Pass, Level::Skip, Level::Warn, Level::Fail, Level::Error})
    if (t.count(l) > 0) out[std::string(to_string(l))] = t.count(l);
  return out;
}

json record_json(const Record& r) {
  return {{"phase", r.phase},   {"test", r.test},       {"metric", r.metric},
          {"node", r.node},     {"gpu_index", r.gpu_index}, {"gpu_uuid", r.gpu_uuid},
          {"rank", r.rank},     {"value", number_or_null(r.value)}, {"unit", r.unit},
          {"params", r.params}, {"status", to_string(r.status)},    {"message", r.message}};
}

json verdict_json(const RuleVerdict& v) {
  json j = {{"rule", v.rule.name},
            {"rule_origin", v.rule.origin},
            {"severity", to_string(v.rule.severity)},
            {"check", to_string(v.check)},
            {"outcome", to_string(v.outcome)},
            {"phase", v.rule.phase},
            {"test", v.rule.test},
            {"measured", number_or_null(v.measured)},
            {"bound", number_or_null(v.bound)},
            {"fleet_median", number_or_null(v.fleet_median)},
            {"peers", v.peers},
            {"basis", v.rule.basis},
            {"message", v.message}};
  if (v.rule.assumes) j["assumes"] = v.rule.assumes->describe();
  if (!v.not_applied_because.empty()) j["not_applied_because"] = v.not_applied_because;
  if (v.record) {
    j["metric"] = v.record->metric;
    j["unit"] = v.record->unit;
    j["node"] = v.record->node;
    j["gpu_index"] = v.record->gpu_index;
    j["rank"] = v.record->rank;
    j["params"] = v.record->params;
  }
  return j;
}

json phase_json(const PhaseSummary& p) {
  json files = json::array();
  for (const auto& s : p.sources)
    files.push_back({{"path", s.path.string()}, {"state", to_string(s.state)}, {"problem", s.problem},
                     {"records", s.records}});
  return {{"phase", p.phase}, {"status", to_string(p.status)}, {"files", files},
          {"checks", tally_json(p.checks)}, {"rules", tally_json(p.rules)}};
}

// Everything but the two arrays that grow with the fleet ("checks", "rule_verdicts").
json summary_head(const Report& r) {
  json j;
  j["gpuaccept_report"] = kSummaryFormatVersion;
  j["run_dir"] = r.run_dir;
  j["generated_at"] = r.generated_at;
  j["tool_version"] = r.tool_version;
  j["verdict"] = verdict_word(r);
  j["skipped_phases"] = r.skipped_phases;
  j["incomplete_reasons"] = r.incomplete_reasons;
  j["nodes_to_drain"] = node_action_json(r.node_actions.drain);
  j["nodes_to_watch"] = node_action_json(r.node_actions.watch);
  j["good_nodes"] = good_nodes_json(r.good_nodes);
  j["node_coverage"] = node_coverage_json(r.node_coverage);
  j["gpu_numbering_ambiguous"] = r.grid.ambiguous;  // node_grid.h: GPU columns that mix several GPUs
  j["unattributed_failures"] = r.node_actions.unattributed_failures;
  j["worst_level"] = to_string(r.verdict);
  j["counts"] = {{"checks", tally_json(r.check_counts)}, {"rules", tally_json(r.rule_counts)}};
  j["thresholds"] = {{"file", r.thresholds.file.string()}, {"model", r.thresholds.model},
                     {"reason", r.thresholds.reason}, {"description", r.thresholds_description}};
  j["phases"] = json::array();
  for (const auto& p : r.phases) j["phases"].push_back(phase_json(p));
  j["fabric"] = fabric_json(r.fabric);
  // The "what failed" list: flagged rule verdicts (WARN included), then failed checks.
  j["failures"] = json::array();
  for (const auto& v : r.verdicts)
    if (v.flagged()) {
      json f = verdict_json(v);
      f["kind"] = "rule";
      j["failures"].push_back(std::move(f));
    }
  for (const auto& c : r.checks)
    if (is_failure(c.status)) {
      json f = record_json(c);
      f["kind"] = "check";
      j["failures"].push_back(std::move(f));
    }
  // The same failures grouped as "What failed" shows them (model/failure_groups.h).
  j["failure_groups"] = json::array();
  for (const auto& g : r.failure_groups)
    j["failure_groups"].push_back({{"level", to_string(g.level)},
                                   {"phase", g.phase},
                                   {"check", g.check},
                                   {"pattern", g.pattern},
                                   {"count", g.count},
                                   {"where", g.where()},
                                   {"nodes", compress_hostlist(g.nodes)},
                                   {"job_level", g.job_level},
                                   {"example", g.verdict ? g.verdict->message : g.example.message}});
  // Absolute floors that did not hold for the GPUs NVML reported (thresholds/gpu_facts.h).
  j["floors_not_applied"] = json::array();
  for (const auto& g : group_floors_not_applied(r))
    j["floors_not_applied"].push_back({{"rule", g.check},
                                       {"because", g.verdict->not_applied_because},
                                       {"assumes", g.verdict->rule.assumes ? g.verdict->rule.assumes->describe() : ""},
                                       {"count", g.count},
                                       {"where", g.where()}});
  if (r.baseline) {
    json regressions = json::array();
    for (const auto& g : r.baseline->regressions) {
      json e = record_json(g.now);
      e["baseline"] = g.baseline;
      e["worse_pct"] = g.worse_pct;
      regressions.push_back(std::move(e));
    }
    j["baseline"] = {{"dir", r.baseline->dir}, {"threshold_pct", r.baseline->threshold_pct},
                     {"regressions", regressions}};
  }
  return j;
}

// `"name": [` one element per line `]`, each element dumped on its own straight to `out`: at
// 8,192 ranks the whole document as one nlohmann DOM took 3 GB and half the report's time.
template <class T, class ToJson>
void write_array(std::ostream& out, const char* name, const std::vector<T>& items, ToJson to_json) {
  out << ",\n  \"" << name << "\": [";
  for (std::size_t i = 0; i < items.size(); ++i)
    out << (i ? ",\n    " : "\n    ") << to_json(items[i]).dump(-1, ' ', false, json::error_handler_t::replace);
  out << (items.empty() ? "]" : "\n  ]");
}

}  // namespace

json summary_json(const Report& r) {
  json j = summary_head(r);
  j["checks"] = json::array();
  for (const auto& c : r.checks) j["checks"].push_back(record_json(c));
  j["rule_verdicts"] = json::array();
  for (const auto& v : r.verdicts) j["rule_verdicts"].push_back(verdict_json(v));
  return j;
}

void write_summary_json(std::ostream& out, const Report& r) {
  std::string head = summary_head(r).dump(2, ' ', false, json::error_handler_t::replace);
  head.pop_back();  // the closing brace: the big arrays go in before it
  while (!head.empty() && (head.back() == '\n' || head.back() == ' ')) head.pop_back();
  out << head;
  write_array(out, "checks", r.checks, record_json);
  write_array(out, "rule_verdicts", r.verdicts, verdict_json);
  out << "\n}\n";
}

std::string summary_json_text(const Report& r) {
  std::ostringstream out;
  write_summary_json(out, r);
  return out.str();
}

}  // namespace gpuaccept::report
