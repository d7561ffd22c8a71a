#include "thresholds/rule.h"

#include <charconv>
#include <cmath>

namespace gpuaccept {

std::string_view to_string(Severity s) { return s == Severity::Fail ? "FAIL" : "WARN"; }

bool ParamRange::contains(double v) const { return (!min || v >= *min) && (!max || v <= *max); }

namespace {

std::optional<double> parse_number(const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<double> line_rate_gbps_of(const Record& r) {
  const auto it = r.params.find(kLineRateParam);
  if (it == r.params.end()) return std::nullopt;
  const auto v = parse_number(it->second);
  if (!v || !std::isfinite(*v) || *v <= 0) return std::nullopt;
  return v;
}

bool ParamFilter::matches(const Params& params) const {
  for (const auto& [key, wanted] : equal) {
    const auto it = params.find(key);
    if (it == params.end() || it->second != wanted) return false;
  }
  for (const auto& [key, r] : range) {
    const auto it = params.find(key);
    if (it == params.end()) return false;
    const auto v = parse_number(it->second);
    if (!v || !r.contains(*v)) return false;
  }
  return true;
}

bool Rule::applies_to(const Record& r) const {
  if (r.phase != phase || r.test != test) return false;
  if (!metric.empty() && r.metric != metric) return false;
  if (!r.has_value() || r.status == Status::Skip || r.status == Status::Error) return false;
  if (min_line_rate_fraction && !line_rate_gbps_of(r)) return false;
  return where.matches(r.params);
}

}  // namespace gpuaccept
