#include "model/good_nodes.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/report.h"

namespace gpuaccept::report {

namespace {

const NodeAction* find_action(const std::vector<NodeAction>& list, const std::string& node) {
  const auto it = std::find_if(list.begin(), list.end(), [&](const auto& a) { return a.node == node; });
  return it == list.end() ? nullptr : &*it;
}

// The first value of `name` among the run's files; for end_time the latest.
std::string run_attribute(const Report& r, const std::string& name, bool latest) {
  std::string out;
  for (const auto& p : r.phases)
    for (const auto& s : p.sources)
      if (const auto it = s.attributes.find(name); it != s.attributes.end() && !it->second.empty()) {
        if (!latest) return it->second;
        out = std::max(out, it->second);  // ISO 8601 UTC sorts as text
      }
  return out;
}

}  // namespace

GoodNodes good_nodes(const Report& r) {
  GoodNodes out;
  out.reservation = run_attribute(r, "slurm_reservation", false);
  out.run_ended = run_attribute(r, "end_time", true);

  std::vector<std::string> order = r.grid.nodes;
  for (const auto& p : r.node_coverage.phases)
    for (const auto& n : p.nodes)
      if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);

  std::set<std::pair<std::string, std::string>> measured;  // (node, phase) with a record that is not a SKIP
  std::set<std::string> gpu_measured;
  for (const auto& c : r.checks) {
    if (c.node.empty() || c.status == Status::Skip) continue;
    measured.insert({c.node, c.phase});
    if (c.gpu_index >= 0) gpu_measured.insert(c.node);
  }
  const std::string whole_run =
      r.node_actions.unattributed_failures > 0
          ? fmt::format("{} failure(s) about the whole job or a file name no node, so any node may be their cause",
                        r.node_actions.unattributed_failures)
          : "";

  for (const auto& node : order) {
    std::string why = whole_run;
    if (why.empty())
      if (const NodeAction* a = find_action(r.node_actions.drain, node)) why = "to drain: " + a->first_problem;
    if (why.empty())
      if (const NodeAction* a = find_action(r.node_actions.watch, node)) why = "to watch: " + a->first_problem;
    if (why.empty())
      if (const auto it = r.node_coverage.missed.find(node); it != r.node_coverage.missed.end())
        why = fmt::format("{} did not run there", fmt::join(it->second, ", "));
    if (why.empty()) {
      std::vector<std::string> unmeasured;
      for (const auto& p : r.phases)
        if (!measured.count({node, p.phase})) unmeasured.push_back(p.phase);
      if (!unmeasured.empty()) why = fmt::format("{} measured nothing on it (no record about it that is not a SKIP)",
                                                 fmt::join(unmeasured, ", "));
    }
    if (why.empty() && !gpu_measured.count(node)) why = "no GPU of it was measured";
    if (why.empty()) out.nodes.push_back(node);
    else out.held_back.push_back({node, why});
  }
  return out;
}

}  // namespace gpuaccept::report
