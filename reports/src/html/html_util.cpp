#include "html/html_util.h"

#include <fmt/format.h>

#include "html/html_escape.h"
#include "thresholds/record_label.h"

namespace gpuaccept::report {

std::string pill(Level l) { return fmt::format(R"(<span class="pill {}">{}</span>)", css_class(l), to_string(l)); }

std::string cell(std::string_view text, std::string_view css_class) {
  if (css_class.empty()) return fmt::format("<td>{}</td>", html_escape(text));
  return fmt::format(R"(<td class="{}">{}</td>)", html_escape(css_class), html_escape(text));
}

std::string params_text(const Params& p) {
  std::string out;
  for (const auto& [k, v] : p) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

std::string value_text(const Record& r) { return format_value(r.value); }

std::string display_path(const std::filesystem::path& p, const std::string& run_dir) {
  const auto rel = p.lexically_relative(run_dir);
  return rel.empty() || rel.string().starts_with("..") ? p.string() : rel.string();
}

std::string demand_text(const RuleVerdict& v) {
  switch (v.check) {
    case RuleCheck::Min: return "≥ " + format_bound(v.bound);
    case RuleCheck::Max: return "≤ " + format_bound(v.bound);
    case RuleCheck::FleetBelow:
      return fmt::format("≥ {} (median {} − {}%)", format_value(v.bound), format_value(v.fleet_median),
                         format_bound(*v.rule.fleet_below_median_pct));
    case RuleCheck::FleetAbove:
      return fmt::format("≤ {} (median {} + {}%)", format_value(v.bound), format_value(v.fleet_median),
                         format_bound(*v.rule.fleet_above_median_pct));
    case RuleCheck::LineRate:
      return fmt::format("≥ {} ({} × {} Gb/s)", format_value(v.bound), format_bound(*v.rule.min_line_rate_fraction),
                         format_bound(v.line_rate_gbps));
    case RuleCheck::NoData: return "-";
  }
  return "-";
}

std::string demand_text(const Rule& rule) {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (rule.min) add("≥ " + format_bound(*rule.min));
  if (rule.max) add("≤ " + format_bound(*rule.max));
  if (rule.min_line_rate_fraction) add(fmt::format("≥ {} × line rate", format_bound(*rule.min_line_rate_fraction)));
  if (rule.fleet_below_median_pct) add(fmt::format("≥ median − {}%", format_bound(*rule.fleet_below_median_pct)));
  if (rule.fleet_above_median_pct) add(fmt::format("≤ median + {}%", format_bound(*rule.fleet_above_median_pct)));
  return out;
}

}  // namespace gpuaccept::report
