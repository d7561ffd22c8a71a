#include "model/failure_groups.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/report.h"
#include "slurm/slurm_api.h"

namespace gpuaccept::report {

namespace {

bool token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

bool is_uuid(std::string_view token) {
  return (token.starts_with("GPU-") || token.starts_with("MIG-")) && token.size() > 8;
}

// One token with its runs of digits (a number's decimal point and exponent included) as "#".
void abstract_numbers(std::string_view token, std::string& out) {
  std::size_t i = 0;
  while (i < token.size()) {
    if (!std::isdigit(static_cast<unsigned char>(token[i]))) {
      out += token[i++];
      continue;
    }
    while (i < token.size() && std::isdigit(static_cast<unsigned char>(token[i]))) ++i;
    if (i + 1 < token.size() && token[i] == '.' && std::isdigit(static_cast<unsigned char>(token[i + 1]))) {
      ++i;
      while (i < token.size() && std::isdigit(static_cast<unsigned char>(token[i]))) ++i;
    }
    if (i + 1 < token.size() && (token[i] == 'e' || token[i] == 'E')) {
      std::size_t j = i + 1;
      if (j < token.size() && (token[j] == '-' || token[j] == '+')) ++j;
      if (j < token.size() && std::isdigit(static_cast<unsigned char>(token[j]))) {
        i = j;
        while (i < token.size() && std::isdigit(static_cast<unsigned char>(token[i]))) ++i;
      }
    }
    out += '#';
  }
}

// A failure about to be grouped: its key, and what it adds to its group.
struct Member {
  Level level;
  std::string phase, check, pattern;
  const Record* record;
  const RuleVerdict* verdict;
  double measured;
};

}  // namespace

std::string abstract_message(std::string_view message, const std::unordered_set<std::string>& names) {
  std::string out;
  out.reserve(message.size());
  std::size_t i = 0;
  while (i < message.size()) {
    if (!token_char(message[i])) {
      out += message[i++];
      continue;
    }
    std::size_t j = i;
    while (j < message.size() && token_char(message[j])) ++j;
    std::string_view token = message.substr(i, j - i);
    // "gpa-node2." at a sentence's end, or "node1," : the name without trailing punctuation.
    std::string_view bare = token;
    while (!bare.empty() && (bare.back() == '.' || bare.back() == '-')) bare.remove_suffix(1);
    if (!bare.empty() && names.count(std::string(bare))) {
      out += "<node>";
      out += token.substr(bare.size());
    } else if (is_uuid(token)) {
      out += "<gpu>";
    } else {
      abstract_numbers(token, out);
    }
    i = j;
  }
  return out;
}

std::string index_ranges(const std::set<int>& indices) {
  std::vector<std::string> parts;
  for (auto it = indices.begin(); it != indices.end();) {
    const int start = *it;
    int end = start;
    for (++it; it != indices.end() && *it == end + 1; ++it) end = *it;
    parts.push_back(end == start ? std::to_string(start) : fmt::format("{}-{}", start, end));
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

std::string FailureGroup::where() const {
  std::vector<std::string> parts;
  // Nodes with the same GPUs named share one hostlist: "gpu[0001-1024] GPUs 0-7".
  std::map<std::string, std::vector<std::string>> by_gpus;  // "0-7" (or "" for the node itself) -> nodes
  std::vector<std::string> order;
  for (const auto& node : nodes) {
    const auto it = gpus.find(node);
    const std::string key = it == gpus.end() ? "" : index_ranges(it->second);
    if (!by_gpus.count(key)) order.push_back(key);
    by_gpus[key].push_back(node);
  }
  for (const auto& key : order) {
    const auto& names = by_gpus[key];
    const std::string list = compress_hostlist(names);
    if (key.empty()) parts.push_back(list);
    else parts.push_back(fmt::format("{} GPU{} {}", list, key.find_first_of(",-") == std::string::npos ? "" : "s", key));
  }
  if (job_level > 0) parts.push_back(job_level == count ? "job" : fmt::format("job ({})", job_level));
  return fmt::format("{}", fmt::join(parts, "; "));
}

namespace {

std::unordered_set<std::string> node_names(const Report& report) {
  std::unordered_set<std::string> names(report.grid.nodes.begin(), report.grid.nodes.end());
  for (const auto& r : report.checks)
    if (!r.node.empty()) names.insert(r.node);
  return names;
}

// Members with the same level, phase, check and pattern are one group, in the order given.
std::vector<FailureGroup> group_members(const std::vector<Member>& members) {
  std::vector<FailureGroup> groups;
  std::vector<std::unordered_set<std::string>> seen;  // per group: the nodes in its list
  std::map<std::tuple<Level, std::string, std::string, std::string>, std::size_t> index;
  for (const Member& m : members) {
    const auto key = std::tuple(m.level, m.phase, m.check, m.pattern);
    auto [it, fresh] = index.try_emplace(key, groups.size());
    if (fresh) {
      FailureGroup g;
      g.level = m.level;
      g.phase = m.phase;
      g.check = m.check;
      g.pattern = m.pattern;
      g.example = *m.record;
      if (m.verdict) g.verdict = *m.verdict;
      groups.push_back(std::move(g));
      seen.emplace_back();
    }
    FailureGroup& g = groups[it->second];
    ++g.count;
    const Record& r = *m.record;
    if (r.node.empty()) {
      ++g.job_level;
    } else {
      if (seen[it->second].insert(r.node).second) g.nodes.push_back(r.node);
      if (r.gpu_index >= 0) g.gpus[r.node].insert(r.gpu_index);
    }
    if (!std::isnan(m.measured)) {
      g.min_measured = g.measured ? std::min(g.min_measured, m.measured) : m.measured;
      g.max_measured = g.measured ? std::max(g.max_measured, m.measured) : m.measured;
      g.measured = true;
    }
  }
  return groups;
}

}  // namespace

std::vector<FailureGroup> group_failures(const Report& report) {
  const auto names = node_names(report);
  std::vector<Member> members;
  for (const auto& v : report.verdicts) {
    if (!v.flagged() || !v.record) continue;
    members.push_back({level_of(v.outcome), v.rule.phase, fmt::format("{} {}", v.rule.name, to_string(v.check)),
                       abstract_message(v.message, names), &*v.record, &v, v.measured});
  }
  for (const auto& r : report.checks) {
    const Level l = level_of(r.status);
    if (!fails_run(l)) continue;
    members.push_back({l, r.phase, r.metric.empty() ? r.test : r.test + " " + r.metric, abstract_message(r.message, names),
                       &r, nullptr, r.value});
  }
  std::vector<FailureGroup> groups = group_members(members);
  // Most severe first; within a level the most frequent first, then in the order seen.
  std::stable_sort(groups.begin(), groups.end(), [](const FailureGroup& a, const FailureGroup& b) {
    return a.level != b.level ? static_cast<int>(a.level) > static_cast<int>(b.level) : a.count > b.count;
  });
  return groups;
}

std::vector<FailureGroup> group_floors_not_applied(const Report& report) {
  const auto names = node_names(report);
  std::vector<Member> members;
  for (const auto& v : report.verdicts)
    if (v.outcome == RuleOutcome::NotApplied && v.record)
      members.push_back({Level::Skip, v.rule.phase, v.rule.name, abstract_message(v.not_applied_because, names),
                         &*v.record, &v, v.measured});
  return group_members(members);
}

}  // namespace gpuaccept::report
