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

std::string rule_cell(const FailureGroup& g) {
  if (!g.verdict)
    return fmt::format(R"(<td><span class="muted">{} check</span></td>)", html_escape(g.phase));
  return fmt::format(R"(<td>{} <span class="origin">{}</span></td>)", html_escape(g.verdict->rule.name),
                     html_escape(std::filesystem::path(g.verdict->rule.origin).filename().string()));
}

std::string measured_text(const FailureGroup& g) {
  const std::string& unit = g.example.unit;
  if (!g.measured) return "-";
  if (g.count == 1 || g.min_measured == g.max_measured)
    return fmt::format("{} {}", g.verdict ? format_value(g.verdict->measured) : value_text(g.example), unit);
  return fmt::format("{} to {} {}", format_value(g.min_measured), format_value(g.max_measured), unit);
}

// A message on one line, the table's remaining width: a long one shows what fits of its start
// (the stylesheet cuts the rest), and the whole when clicked (no script).
std::string message_cell(const std::string& text, const std::string& prefix_html = "") {
  constexpr std::size_t kOneLine = 80;
  if (text.size() <= kOneLine) return fmt::format(R"(<td class="message">{}{}</td>)", prefix_html, html_escape(text));
  return fmt::format(R"(<td class="message"><details class="more"><summary>{}{}</summary></details></td>)", prefix_html,
                     html_escape(text));
}

// One row per group: a failure seen once reads as it always did; one seen N times says so,
// where (a hostlist, and the GPUs, linked to the phase's table of every record), and quotes
// its first member as the example. One line each, so that every distinct failure of a run
// of 8,192 GPUs is on the report's first screen.
std::string group_row(const FailureGroup& g) {
  const std::string place = g.count == 1 ? place_label(g.example) : g.where();
  const std::string where =
      g.count == 1 ? html_escape(place)
                   : fmt::format(R"(<span class="count-badge">{} &#215;</span> {} <a class="all-of" href="#phase-{}">all</a>)",
                                 g.count, html_escape(place), html_escape(g.phase));
  const std::string& message = g.verdict ? g.verdict->message : g.example.message;
  const std::string what = measurement_label(g.example);
  return fmt::format(R"(<tr><td>{}</td><td class="where" title="{}">{}</td><td title="{}">{}</td>{}{}{}{}</tr>
)",
                     pill(g.level), html_escape(place), where, html_escape(what), html_escape(what), cell(measured_text(g), "num"),
                     cell(g.verdict ? demand_text(*g.verdict) : "-", "num"), rule_cell(g),
                     message_cell(message, g.count == 1 ? "" : R"(<span class="muted">e.g.</span> )"));
}

}  // namespace

std::string failures_section(const Report& r) {
  if (r.failure_groups.empty())
    return R"(<section id="failures"><h2>What failed</h2><p class="ok">Nothing failed: every check passed or was skipped, and every rule was met.</p></section>
)";
  std::string body;
  int items = 0;
  for (const auto& g : r.failure_groups) {
    body += group_row(g);
    items += g.count;
  }
  const std::string count =
      items == static_cast<int>(r.failure_groups.size())
          ? fmt::format("{} items", items)
          : fmt::format("{} items, {} distinct: each row one failure and how often it was seen", items,
                        r.failure_groups.size());
  return fmt::format(R"(<section id="failures"><h2>What failed <span class="muted">({})</span></h2>
<table class="failures"><thead><tr><th>status</th><th>where</th><th>what</th><th>measured</th><th>bound</th><th>rule</th><th>message</th></tr></thead>
<tbody>
{}</tbody></table>
</section>
)",
                     count, body);
}

std::string floors_section(const Report& r) {
  const auto groups = group_floors_not_applied(r);
  if (groups.empty()) return {};
  std::string rows;
  int records = 0;
  for (const auto& g : groups) {
    records += g.count;
    const RuleVerdict& v = *g.verdict;
    rows += fmt::format("<tr>{}{}{}{}{}</tr>\n", cell(v.rule.name), cell(demand_text(v), "num"),
                        cell(v.rule.assumes ? v.rule.assumes->describe() : "-"),
                        cell(v.not_applied_because, "message"),
                        fmt::format(R"(<td class="where"><span class="count-badge">{} &#215;</span> {}</td>)", g.count,
                                    html_escape(g.where())));
  }
  return fmt::format(R"(<section id="floors"><h2>Floors not applied <span class="muted">({} records)</span></h2>
<p class="muted">These absolute floors were measured on another GPU than NVML reported here (or NVML did not say): they judge nothing on these records, and the fleet rules (each GPU against its peers) judge them alone.</p>
<table class="floors"><thead><tr><th>rule</th><th>floor</th><th>measured on</th><th>why not here</th><th>where</th></tr></thead>
<tbody>
{}</tbody></table>
</section>
)",
                     records, rows);
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
