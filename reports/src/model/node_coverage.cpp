#include "model/node_coverage.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "slurm/slurm_api.h"

namespace gpuaccept::report {

namespace {

// The nodes one file names: the hostnames its ranks ran on (`hosts`, written with a complete
// file), else the job's allocation (`slurm_nodelist`, on every file and rank checkpoint).
std::vector<std::string> nodes_of(const PhaseSource& s) {
  std::vector<std::string> out;
  if (const auto h = s.attributes.find("hosts"); h != s.attributes.end() && !h->second.empty()) {
    std::size_t start = 0;
    while (start <= h->second.size()) {
      const std::size_t comma = std::min(h->second.find(',', start), h->second.size());
      if (comma > start) out.push_back(h->second.substr(start, comma - start));
      start = comma + 1;
    }
    return out;
  }
  if (const auto n = s.attributes.find("slurm_nodelist"); n != s.attributes.end() && !n->second.empty()) {
    try {
      return expand_hostlist(n->second);
    } catch (const std::exception&) {
      return {};  // not a hostlist: the file names no node we can compare
    }
  }
  return out;
}

}  // namespace

NodeCoverage node_coverage(const std::vector<PhaseSource>& sources) {
  std::vector<std::string> order;
  std::map<std::string, std::set<std::string>> by_phase;
  for (const auto& s : sources) {
    const std::vector<std::string> nodes = nodes_of(s);
    if (nodes.empty()) continue;
    if (!by_phase.count(s.phase)) order.push_back(s.phase);
    by_phase[s.phase].insert(nodes.begin(), nodes.end());
  }
  NodeCoverage c;
  std::set<std::string> all;
  for (const auto& phase : order) {
    const auto& nodes = by_phase[phase];
    c.phases.push_back({phase, {nodes.begin(), nodes.end()}});
    all.insert(nodes.begin(), nodes.end());
  }
  for (const auto& node : all)
    for (const auto& p : c.phases)
      if (!std::binary_search(p.nodes.begin(), p.nodes.end(), node)) c.missed[node].push_back(p.phase);
  return c;
}

std::string missed_phases_text(const NodeCoverage& c, std::size_t max_nodes) {
  std::vector<std::string> parts;
  for (const auto& [node, phases] : c.missed) {
    if (parts.size() == max_nodes) {
      parts.push_back(fmt::format("and {} more nodes", c.missed.size() - max_nodes));
      break;
    }
    parts.push_back(fmt::format("{} did not run {}", node, fmt::join(phases, ", ")));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace gpuaccept::report
