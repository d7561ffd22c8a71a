#include "run/baseline_compare.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace gpuaccept::report {

Better better_direction(const Record& r) {
  static const std::set<std::string> kHigher = {"GB/s", "TFLOP/s", "tokens/s", "%"};
  static const std::set<std::string> kLower = {"us", "s"};
  if (kHigher.count(r.unit)) return Better::Higher;
  if (kLower.count(r.unit)) return Better::Lower;
  return Better::Unknown;
}

namespace {

using MeasurementKey = std::tuple<std::string, std::string, std::string, Params, std::string, int>;

MeasurementKey key_of(const Record& r) { return {r.phase, r.test, r.metric, r.params, r.node, r.gpu_index}; }

// Repeats of one measurement (several ranks, or a phase run twice) are summarised by
// their median, so one noisy repeat neither hides nor fakes a regression.
std::map<MeasurementKey, std::vector<const Record*>> by_measurement(const std::vector<Record>& records) {
  std::map<MeasurementKey, std::vector<const Record*>> out;
  for (const auto& r : records)
    if (r.has_value() && better_direction(r) != Better::Unknown) out[key_of(r)].push_back(&r);
  return out;
}

double median_value(std::vector<const Record*> rs) {
  std::sort(rs.begin(), rs.end(), [](const Record* a, const Record* b) { return a->value < b->value; });
  const std::size_t n = rs.size();
  return n % 2 == 1 ? rs[n / 2]->value : (rs[n / 2 - 1]->value + rs[n / 2]->value) / 2;
}

}  // namespace

std::vector<Regression> find_regressions(const std::vector<Record>& baseline, const std::vector<Record>& now,
                                         double threshold_pct) {
  const auto before = by_measurement(baseline);
  std::vector<Regression> out;
  for (const auto& [key, records] : by_measurement(now)) {
    const auto it = before.find(key);
    if (it == before.end()) continue;
    const double was = median_value(it->second);
    const double is = median_value(records);
    if (was == 0) continue;
    const double change_pct = (is - was) / was * 100;
    const double worse = better_direction(*records.front()) == Better::Higher ? -change_pct : change_pct;
    if (worse <= threshold_pct) continue;
    Record r = *records.front();
    r.value = is;
    out.push_back({std::move(r), was, worse});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.worse_pct > b.worse_pct; });
  return out;
}

}  // namespace gpuaccept::report
