// Per phase: its files, the rules that judged it, the training phases' checkpoint drill and
// every check it recorded. Rows that are not plain PASS come first; passing ones wait behind
// a <details>.
#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "html/html_checkpoints.h"
#include "html/html_escape.h"
#include "html/html_sections.h"
#include "html/html_util.h"
#include "thresholds/record_label.h"

namespace gpuaccept::report {

namespace {

std::string sources_html(const Report& r, const PhaseSummary& p) {
  std::string out;
  for (const auto& s : p.sources) {
    const auto attr = [&](const char* k) {
      const auto it = s.attributes.find(k);
      return it == s.attributes.end() ? std::string() : it->second;
    };
    std::string facts = fmt::format("{}, {} records", to_string(s.state), s.records);
    for (const char* k : {"start_time", "slurm_job_id", "slurm_nodelist", "world_size", "git_commit", "tool_version"})
      if (!attr(k).empty()) facts += fmt::format(", {} {}", k, attr(k));
    out += fmt::format(R"(<div class="source-line"><code>{}</code> <span class="muted">{}</span>{}</div>)",
                       html_escape(display_path(s.path, r.run_dir)), html_escape(facts),
                       s.problem.empty() ? "" : R"(<div class="problem">)" + html_escape(s.problem) + "</div>");
    if (!attr("config").empty())
      out += fmt::format(R"(<details class="config"><summary>config {}</summary><pre>{}</pre></details>)",
                         html_escape(attr("config_path")), html_escape(attr("config")));
  }
  return out;
}

std::string rules_table(const Report& r, const std::string& phase) {
  struct RuleRow {
    const Rule* rule = nullptr;
    LevelTally tally;
  };
  std::vector<RuleRow> rows;
  for (const auto& v : r.verdicts) {
    if (v.rule.phase != phase) continue;
    auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& row) { return row.rule->name == v.rule.name; });
    if (it == rows.end()) it = rows.insert(rows.end(), RuleRow{&v.rule, {}});
    it->tally.add(v.outcome == RuleOutcome::NoData ? Level::Skip : level_of(v.outcome));
  }
  if (rows.empty()) return {};
  std::string body, unused;
  for (const auto& row : rows) {
    // A rule with nothing to judge here (another GPU count, a test this run skipped)
    // is named once instead of filling a row.
    if (row.tally.total() == row.tally.count(Level::Skip)) {
      unused += (unused.empty() ? "" : ", ") + html_escape(row.rule->name);
      continue;
    }
    body += fmt::format("<tr>{}<td>{}</td>{}{}{}{}{}{}</tr>\n", cell(row.rule->name, "nowrap"),
                        pill(row.tally.summary()), cell(demand_text(*row.rule), "nowrap"),
                        cell(std::to_string(row.tally.total()), "num"),
                        cell(std::to_string(row.tally.count(Level::Warn)), "num"),
                        cell(std::to_string(row.tally.count(Level::Fail)), "num"),
                        cell(row.rule->basis.empty() ? "fleet comparison" : row.rule->basis),
                        fmt::format(R"(<td class="origin" title="{}">{}</td>)", html_escape(row.rule->origin),
                                    html_escape(std::filesystem::path(row.rule->origin).filename().string())));
  }
  std::string out = "<h4>Rules</h4>\n";
  if (!body.empty())
    out += R"(<table class="rules"><thead><tr><th>rule</th><th>result</th><th>demand</th><th>judged</th><th>warn</th><th>fail</th><th>basis</th><th>defined at</th></tr></thead>
<tbody>
)" + body + "</tbody></table>\n";
  if (!unused.empty())
    out += R"(<p class="muted unused-rules">No matching records for: )" + unused + "</p>\n";
  return out;
}

std::string check_row(const Report& r, const Record& rec) {
  const Level rule_level = r.rule_level(rec);
  const std::string status =
      pill(level_of(rec.status)) +
      (rule_level == Level::Warn || fails_run(rule_level) ? R"( <span class="rule-flag">rule </span>)" + pill(rule_level)
                                                           : "");
  std::string message = html_escape(rec.message);
  if (const auto notes = r.rule_notes.find(record_identity(rec)); notes != r.rule_notes.end())
    for (const auto& n : notes->second) message += R"(<div class="rule-note">)" + html_escape(n) + "</div>";
  return fmt::format("<tr><td class=\"nowrap\">{}</td>{}{}{}{}{}{}<td class=\"message\">{}</td></tr>\n", status,
                     cell(rec.test), cell(rec.node, "nowrap"),
                     cell(rec.gpu_index >= 0 ? std::to_string(rec.gpu_index) : "", "num"), cell(value_text(rec), "num"),
                     cell(rec.unit), cell(params_text(rec.params), "params"), message);
}

std::string checks_table(const std::string& rows) {
  return R"(<table class="checks"><thead><tr><th>status</th><th>test</th><th>node</th><th>GPU</th><th>value</th><th>unit</th><th>params</th><th>message</th></tr></thead>
<tbody>
)" + rows + "</tbody></table>\n";
}

// Past this many rows a table stops listing records one by one: at 8,192 ranks a phase has
// hundreds of thousands, and a page that lists them all (250 MB) no browser opens.
// summary.json keeps every record.
constexpr std::size_t kMaxRows = 2000;

// The passing checks of a large phase, one row per measurement: how many, and the spread.
std::string passing_summary(const std::vector<const Record*>& records) {
  struct Group {
    std::string unit;
    std::size_t count = 0;
    std::vector<double> values;
  };
  std::map<std::string, Group> groups;  // by measurement (title_label), then test name
  for (const Record* rec : records) {
    Group& g = groups[rec->has_value() ? fmt::format("{} {}", rec->test, title_label(*rec)) : rec->test];
    g.unit = rec->unit;
    ++g.count;
    if (rec->has_value()) g.values.push_back(rec->value);
  }
  std::string rows;
  for (auto& [name, g] : groups) {
    std::string spread;
    if (!g.values.empty()) {
      std::sort(g.values.begin(), g.values.end());
      spread = fmt::format("{} / {} / {}", format_value(g.values.front()), format_value(g.values[g.values.size() / 2]),
                           format_value(g.values.back()));
    }
    rows += fmt::format("<tr>{}{}{}{}</tr>\n", cell(name), cell(std::to_string(g.count), "num"), cell(spread, "num"),
                        cell(g.unit));
  }
  return R"(<table class="checks"><thead><tr><th>measurement</th><th>passing</th><th>min / median / max</th><th>unit</th></tr></thead>
<tbody>
)" + rows + "</tbody></table>\n";
}

std::string phase_html(const Report& r, const PhaseSummary& p) {
  std::vector<std::pair<Level, const Record*>> rows;
  for (const auto& rec : r.checks)
    if (rec.phase == p.phase) rows.emplace_back(worst(level_of(rec.status), r.rule_level(rec)), &rec);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return static_cast<int>(a.first) > static_cast<int>(b.first); });
  std::string attention;
  std::vector<const Record*> passing;
  std::size_t attention_count = 0;
  for (const auto& [level, rec] : rows) {
    if (level == Level::Pass) {
      passing.push_back(rec);
    } else if (++attention_count <= kMaxRows) {
      attention += check_row(r, *rec);  // worst first: what is cut is the mildest
    }
  }
  std::string checks;
  if (!attention.empty()) checks += checks_table(attention);
  if (attention_count > kMaxRows)
    checks += fmt::format(R"(<p class="muted">… and {} more checks that are not PASS (the mildest); every one is in summary.json.</p>)",
                          attention_count - kMaxRows);
  if (passing.size() > kMaxRows) {
    checks += fmt::format(R"(<details class="passing"><summary>{} passing checks, one row per measurement (each one is in summary.json)</summary>{}</details>)",
                          passing.size(), passing_summary(passing));
  } else if (!passing.empty()) {
    std::string passing_rows;
    for (const Record* rec : passing) passing_rows += check_row(r, *rec);
    checks += fmt::format(R"(<details class="passing"><summary>{} passing checks</summary>{}</details>)", passing.size(),
                          checks_table(passing_rows));
  }
  if (rows.empty()) checks = R"(<p class="muted">No records.</p>)";
  return fmt::format(R"(<section id="phase-{ph}" class="phase {cls}">
<h3>{ph} {status}</h3>
{sources}
{rules}
{checkpoints}
<h4>Checks</h4>
{checks}
</section>
)",
                     fmt::arg("ph", html_escape(p.phase)), fmt::arg("cls", css_class(p.status)),
                     fmt::arg("status", pill(p.status)), fmt::arg("sources", sources_html(r, p)), fmt::arg("rules", rules_table(r, p.phase)),
                     fmt::arg("checkpoints", checkpoint_part(r, p.phase)),
                     fmt::arg("checks", checks));
}

}  // namespace

std::string phase_details_section(const Report& r) {
  std::string out = R"(<h2 id="details" class="section-heading">Checks by phase</h2>
)";
  for (const auto& p : r.phases) out += phase_html(r, p);
  return out;
}

}  // namespace gpuaccept::report
