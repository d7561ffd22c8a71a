#include "model/node_grid.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "thresholds/record_label.h"

namespace gpuaccept::report {

const GridCell* NodeGrid::cell(const std::string& node, int gpu) const {
  const auto it = cells.find({node, gpu});
  return it == cells.end() ? nullptr : &it->second;
}

int NodeGrid::row(const std::string& node) const {
  const auto it = row_of.find(node);
  return it == row_of.end() ? static_cast<int>(nodes.size()) : it->second;
}

namespace {

void add_node(NodeGrid& g, const std::string& node) {
  if (node.empty() || g.row_of.count(node)) return;
  g.row_of.emplace(node, static_cast<int>(g.nodes.size()));
  g.nodes.push_back(node);
}

GridCell& cell_of(NodeGrid& g, const Record& r) {
  add_node(g, r.node);
  g.gpus = std::max(g.gpus, r.gpu_index + 1);
  return g.cells[{r.node, r.gpu_index >= 0 ? r.gpu_index : kNodeColumn}];
}

}  // namespace

NodeGrid build_node_grid(const std::vector<std::string>& known_nodes, const std::vector<Record>& records,
                         const std::vector<RuleVerdict>& verdicts) {
  NodeGrid g;
  for (const auto& n : known_nodes) add_node(g, n);
  std::map<std::pair<std::string, int>, std::set<std::string>> uuids;  // (node, GPU index) -> the GPUs named so
  for (const auto& r : records) {
    if (r.node.empty()) continue;  // about the whole job: shown in the phase tables
    if (r.gpu_index >= 0 && !r.gpu_uuid.empty()) uuids[{r.node, r.gpu_index}].insert(r.gpu_uuid);
    GridCell& c = cell_of(g, r);
    const Level l = level_of(r.status);
    c.tally.add(l);
    if (l != Level::Pass) c.notes.push_back(fmt::format("{} {}: {}", to_string(l), measurement_label(r), r.message));
  }
  for (const auto& v : verdicts) {
    if (!v.record || v.record->node.empty()) continue;
    GridCell& c = cell_of(g, *v.record);
    const Level l = level_of(v.outcome);
    c.tally.add(l);
    if (!v.flagged()) continue;
    c.outlier = c.outlier || v.check == RuleCheck::FleetBelow || v.check == RuleCheck::FleetAbove;
    c.notes.push_back(fmt::format("{} {}: {}", to_string(l), v.rule.name, v.message));
  }
  for (const auto& [at, names] : uuids)
    if (names.size() > 1)
      g.ambiguous.push_back(fmt::format("{} GPU {} is {} different GPUs in the records ({}): that column mixes them",
                                        at.first, at.second, names.size(), fmt::join(names, ", ")));
  return g;
}

}  // namespace gpuaccept::report
