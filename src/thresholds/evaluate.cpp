#include "thresholds/evaluate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "thresholds/record_label.h"

namespace gpuaccept {

std::string_view to_string(RuleOutcome o) {
  switch (o) {
    case RuleOutcome::Pass: return "PASS";
    case RuleOutcome::NotApplied: return "NOT_APPLIED";
    case RuleOutcome::NoData: return "NO_DATA";
    case RuleOutcome::Warn: return "WARN";
    case RuleOutcome::Fail: return "FAIL";
  }
  return "FAIL";
}

std::string_view to_string(RuleCheck c) {
  switch (c) {
    case RuleCheck::Min: return "min";
    case RuleCheck::Max: return "max";
    case RuleCheck::FleetBelow: return "fleet_below_median";
    case RuleCheck::FleetAbove: return "fleet_above_median";
    case RuleCheck::LineRate: return "min_line_rate_fraction";
    case RuleCheck::NoData: return "no_data";
  }
  return "no_data";
}

namespace {

using PeerKey = std::tuple<std::string, std::string, std::string, Params>;

PeerKey peer_key(const Record& r) { return {r.phase, r.test, r.metric, r.params}; }

// The median of `sorted` (ascending) with one element equal to `self` left out: a record's
// peers are its fleet without itself. One sorted copy per fleet serves every member, where
// sorting the peers per member cost O(n^2 log n): 8,192 GPUs took the report 30 s.
double median_without(const std::vector<double>& sorted, double self) {
  const std::size_t skip = static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), self) - sorted.begin());
  const auto at = [&](std::size_t j) { return sorted[j < skip ? j : j + 1]; };
  const std::size_t m = sorted.size() - 1;
  return m % 2 == 1 ? at(m / 2) : (at(m / 2 - 1) + at(m / 2)) / 2;
}

RuleOutcome outcome_of(bool violated, const Rule& rule) {
  if (!violated) return RuleOutcome::Pass;
  return rule.severity == Severity::Fail ? RuleOutcome::Fail : RuleOutcome::Warn;
}

std::string subject(const Record& r) {
  return fmt::format("{}: {} = {} {}", place_label(r), measurement_label(r), format_value(r.value), r.unit);
}

RuleVerdict verdict_for(const Rule& rule, const Record& r, RuleCheck check) {
  RuleVerdict v;
  v.rule = rule;
  v.check = check;
  v.record = r;
  v.measured = r.value;
  return v;
}

// Why the floor does not hold for the record's GPUs ("" when it does).
std::string floor_not_applied(const Rule& rule, const Record& r, const GpuFactsIndex& gpus) {
  if (!rule.assumes) return {};
  const auto mine = gpus.of(r);
  if (mine.empty()) return "discover's inventory has no NVML facts for its GPUs";
  for (const GpuFacts* g : mine)
    if (std::string why = rule.assumes->unmet_by(*g); !why.empty()) return why;
  return {};
}

RuleVerdict absolute_verdict(const Rule& rule, const Record& r, RuleCheck check, const GpuFactsIndex& gpus) {
  RuleVerdict v = verdict_for(rule, r, check);
  const bool is_min = check == RuleCheck::Min;
  v.bound = is_min ? *rule.min : *rule.max;
  const std::string assumes = rule.assumes ? "; for " + rule.assumes->describe() : "";
  if (is_min) {
    if (const std::string why = floor_not_applied(rule, r, gpus); !why.empty()) {
      v.outcome = RuleOutcome::NotApplied;
      v.not_applied_because = why;
      v.message = fmt::format("{}: floor {} not applied: {} ({}{}); the fleet rules judge it", subject(r),
                              format_bound(v.bound), why, rule.basis, assumes);
      return v;
    }
  }
  const bool violated = is_min ? r.value < v.bound : r.value > v.bound;
  v.outcome = outcome_of(violated, rule);
  const char* op = is_min ? (violated ? "<" : ">=") : (violated ? ">" : "<=");
  v.message = fmt::format("{} {} {} ({}{})", subject(r), op, format_bound(v.bound), rule.basis, is_min ? assumes : "");
  return v;
}

std::string param_or(const Record& r, const char* key, const char* otherwise) {
  const auto it = r.params.find(key);
  return it == r.params.end() || it->second.empty() ? otherwise : it->second;
}

// At least a fraction of the line rate the record names: Gb/s of the ports over 8 bits a byte
// gives the GB/s (10^9 bytes/s) of busbw and algbw. The message says where the line rate
// came from (the ports, the Ethernet interface, a configured reference) and over what
// fabric, since a bound from a reference rate is weaker evidence than one from the ports.
RuleVerdict line_rate_verdict(const Rule& rule, const Record& r) {
  RuleVerdict v = verdict_for(rule, r, RuleCheck::LineRate);
  v.line_rate_gbps = *line_rate_gbps_of(r);
  const double line_rate_gbytes = v.line_rate_gbps / 8;
  v.bound = *rule.min_line_rate_fraction * line_rate_gbytes;
  const bool violated = r.value < v.bound;
  v.outcome = outcome_of(violated, rule);
  v.message = fmt::format("{} {} {} ({} x line rate {} Gb/s = {} GB/s; line rate from {}, fabric {}; {})", subject(r),
                          violated ? "<" : ">=", format_value(v.bound), format_bound(*rule.min_line_rate_fraction),
                          format_bound(v.line_rate_gbps), format_value(line_rate_gbytes),
                          param_or(r, "line_rate_source", "(source not given)"), param_or(r, "fabric", "(not given)"),
                          rule.basis);
  return v;
}

// `fleet`: the values of the record's fleet, itself included, sorted.
RuleVerdict fleet_verdict(const Rule& rule, const Record& r, RuleCheck check, const std::vector<double>& fleet) {
  RuleVerdict v = verdict_for(rule, r, check);
  v.fleet_median = median_without(fleet, r.value);
  v.peers = static_cast<int>(fleet.size()) - 1;
  const bool below = check == RuleCheck::FleetBelow;
  const double pct = below ? *rule.fleet_below_median_pct : *rule.fleet_above_median_pct;
  v.bound = v.fleet_median * (below ? 1 - pct / 100 : 1 + pct / 100);
  const bool violated = below ? r.value < v.bound : r.value > v.bound;
  v.outcome = outcome_of(violated, rule);
  const double off = v.fleet_median == 0 ? 0 : (r.value - v.fleet_median) / v.fleet_median * 100;
  v.message = fmt::format("{} is {:.1f}% {} the median {} of {} peers (limit {}% {})", subject(r), std::fabs(off),
                          off < 0 ? "below" : "above", format_value(v.fleet_median), v.peers, format_bound(pct),
                          below ? "below" : "above");
  // The outlier's own account, where its record has one: a training phase's GPU says the clocks,
  // power and clock-event reasons it ran at, which is what an operator acts on.
  if (violated && !r.message.empty()) v.message += fmt::format("; its record: {}", r.message);
  return v;
}

}  // namespace

std::vector<RuleVerdict> evaluate(const ThresholdSet& thresholds, const std::vector<Record>& records,
                                  const GpuFactsIndex& gpus) {
  std::vector<RuleVerdict> out;
  for (const Rule& rule : thresholds.rules) {
    std::vector<const Record*> matched;
    std::vector<std::vector<double>*> fleet_of;  // per matched record: its fleet's values
    std::map<PeerKey, std::vector<double>> fleets;
    const bool fleet_rule = rule.fleet_below_median_pct || rule.fleet_above_median_pct;
    for (const Record& r : records) {
      if (!rule.applies_to(r)) continue;
      matched.push_back(&r);
      if (!fleet_rule) continue;
      std::vector<double>& fleet = fleets[peer_key(r)];
      fleet.push_back(r.value);
      fleet_of.push_back(&fleet);
    }
    for (auto& [key, values] : fleets) std::sort(values.begin(), values.end());
    if (matched.empty()) {
      RuleVerdict none;
      none.rule = rule;
      none.message = fmt::format("no {} {}{} record with a value matched rule {}", rule.phase, rule.test,
                                 rule.metric.empty() ? "" : " " + rule.metric, rule.name);
      out.push_back(std::move(none));
      continue;
    }
    for (std::size_t i = 0; i < matched.size(); ++i) {
      const Record& r = *matched[i];
      if (rule.min) out.push_back(absolute_verdict(rule, r, RuleCheck::Min, gpus));
      if (rule.max) out.push_back(absolute_verdict(rule, r, RuleCheck::Max, gpus));
      if (rule.min_line_rate_fraction) out.push_back(line_rate_verdict(rule, r));
      if (!fleet_rule) continue;
      const std::vector<double>& fleet = *fleet_of[i];
      if (fleet.size() < 2) continue;  // a fleet of one has nothing to be compared with
      if (rule.fleet_below_median_pct) out.push_back(fleet_verdict(rule, r, RuleCheck::FleetBelow, fleet));
      if (rule.fleet_above_median_pct) out.push_back(fleet_verdict(rule, r, RuleCheck::FleetAbove, fleet));
    }
  }
  return out;
}

}  // namespace gpuaccept
