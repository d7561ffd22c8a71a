// "What failed" and "what got worse": the two lists an operator reads first.
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "html/html_escape.h"
#include "html/html_sections.h"
#include "html/html_util.h"
#include "thresholds/record_label.h"

namespace gpuaccept::report {

namespace {

struct FailureRow {
  Level level;
  std::string html;
};

std::string failure_row(Level l, const std::string& where, const std::string& what, const std::string& measured,
                        const std::string& bound, const std::string& rule_html, const std::string& message) {
  return fmt::format("<tr><td>{}</td>{}{}{}{}<td>{}</td>{}</tr>\n", pill(l), cell(where, "nowrap"), cell(what),
                     cell(measured, "num"), cell(bound, "num"), rule_html, cell(message, "message"));
}

}  // namespace

std::string failures_section(const Report& r) {
  std::vector<FailureRow> rows;
  for (const auto& v : r.verdicts) {
    if (!v.flagged() || !v.record) continue;
    const Record& rec = *v.record;
    const std::string rule = fmt::format(R"({}<div class="origin">{}</div>)", html_escape(v.rule.name),
                                         html_escape(std::filesystem::path(v.rule.origin).filename().string()));
    rows.push_back({level_of(v.outcome),
                    failure_row(level_of(v.outcome), place_label(rec), measurement_label(rec),
                                fmt::format("{} {}", format_value(v.measured), rec.unit), demand_text(v), rule,
                                v.message)});
  }
  for (const auto& rec : r.checks) {
    const Level l = level_of(rec.status);
    if (!fails_run(l)) continue;
    rows.push_back({l, failure_row(l, place_label(rec), measurement_label(rec),
                                   rec.has_value() ? fmt::format("{} {}", value_text(rec), rec.unit) : "-", "-",
                                   fmt::format(R"(<span class="muted">{} check</span>)", html_escape(rec.phase)),
                                   rec.message)});
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return static_cast<int>(a.level) > static_cast<int>(b.level); });
  if (rows.empty())
    return R"(<section id="failures"><h2>What failed</h2><p class="ok">Nothing failed: every check passed or was skipped, and every rule was met.</p></section>
)";
  std::string body;
  for (const auto& row : rows) body += row.html;
  return fmt::format(R"(<section id="failures"><h2>What failed <span class="muted">({} items)</span></h2>
<table class="failures"><thead><tr><th>status</th><th>where</th><th>what</th><th>measured</th><th>bound</th><th>rule</th><th>message</th></tr></thead>
<tbody>
{}</tbody></table>
</section>
)",
                     rows.size(), body);
}

std::string regressions_section(const Report& r) {
  if (!r.baseline) return {};
  const auto& b = *r.baseline;
  if (b.regressions.empty())
    return fmt::format(R"(<section id="regressions"><h2>What got worse</h2><p class="ok">No measurement is more than {}% worse than in <code>{}</code>.</p></section>
)",
                       format_bound(b.threshold_pct), html_escape(b.dir));
  std::string rows;
  for (const auto& g : b.regressions)
    rows += fmt::format("<tr>{}{}{}{}{}{}</tr>\n", cell(g.now.phase), cell(measurement_label(g.now)),
                        cell(place_label(g.now), "nowrap"), cell(format_value(g.baseline) + " " + g.now.unit, "num"),
                        cell(format_value(g.now.value) + " " + g.now.unit, "num"),
                        cell(fmt::format("{:.1f}%", g.worse_pct), "num worse"));
  return fmt::format(R"(<section id="regressions"><h2>What got worse <span class="muted">(more than {}% against <code>{}</code>)</span></h2>
<table class="regressions"><thead><tr><th>phase</th><th>what</th><th>where</th><th>baseline</th><th>now</th><th>worse by</th></tr></thead>
<tbody>
{}</tbody></table>
</section>
)",
                     format_bound(b.threshold_pct), html_escape(b.dir), rows);
}

}  // namespace gpuaccept::report
