#include "model/node_actions.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "model/report.h"
#include "thresholds/record_label.h"

namespace gpuaccept::report {

namespace {

bool relative_check(RuleCheck c) { return c == RuleCheck::FleetBelow || c == RuleCheck::FleetAbove; }

// One node's evidence while the report is read, in the order the report lists it.
struct Evidence {
  std::vector<std::string> failures;  // drain
  std::vector<std::string> concerns;  // watch
};

void add_to(std::vector<NodeAction>& list, const std::string& node, const std::vector<std::string>& lines) {
  list.push_back({node, lines.front(), static_cast<int>(lines.size())});
}

}  // namespace

NodeActions node_actions(const Report& report) {
  NodeActions out;
  std::map<std::string, Evidence> by_node;
  for (const auto& r : report.checks) {
    if (r.status != Status::Fail && r.status != Status::Error) continue;
    if (!blames_node(r)) {
      ++out.unattributed_failures;
      continue;
    }
    by_node[r.node].failures.push_back(fmt::format("{} {}: {}", to_string(r.status), measurement_label(r), r.message));
  }
  for (const auto& v : report.verdicts) {
    if (!v.flagged() || !v.record) continue;
    if (!blames_node(*v.record)) {
      if (v.outcome == RuleOutcome::Fail && !relative_check(v.check)) ++out.unattributed_failures;
      continue;
    }
    auto& e = by_node[v.record->node];
    const std::string line = fmt::format("{} {}: {}", to_string(v.outcome), v.rule.name, v.message);
    if (v.outcome == RuleOutcome::Fail && !relative_check(v.check)) e.failures.push_back(line);
    else e.concerns.push_back(line);
  }
  // Counters that went down or cannot show a rise (model/port_counters.h): worth a look.
  for (const auto& [node, line] : fabric_concerns(report.fabric)) by_node[node].concerns.push_back(line);
  // The report's node order (the inventory's), then nodes seen only in records.
  std::vector<std::string> order = report.grid.nodes;
  for (const auto& [node, e] : by_node)
    if (std::find(order.begin(), order.end(), node) == order.end()) order.push_back(node);
  for (const auto& node : order) {
    const auto it = by_node.find(node);
    if (it == by_node.end()) continue;
    if (!it->second.failures.empty()) add_to(out.drain, node, it->second.failures);
    else if (!it->second.concerns.empty()) add_to(out.watch, node, it->second.concerns);
  }
  return out;
}

}  // namespace gpuaccept::report
