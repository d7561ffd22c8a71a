#include "html/html_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "html/html_escape.h"
#include "html/html_sections.h"
#include "html/html_style.h"
#include "html/html_util.h"

namespace gpuaccept::report {

namespace {

// `skip_word`: what SKIP means in this tally; for rule verdicts it is "no data".
std::string tally_text(const LevelTally& t, std::string_view skip_word = "SKIP") {
  std::string out;
  for (Level l : {Level::Error, Level::Fail, Level::Warn, Level::Skip, Level::Pass})
    if (t.count(l) > 0)
      out += fmt::format(R"(<span class="count {}">{} {}</span>)", css_class(l), t.count(l),
                         l == Level::Skip ? skip_word : to_string(l));
  return out.empty() ? "none" : out;
}

}  // namespace

std::string verdict_section(const Report& r) {
  const Level v = r.verdict;
  const std::string word(verdict_word(r));
  const bool incomplete = word == "INCOMPLETE";
  const std::string note = fails_run(v)         ? "not accepted: something failed"
                           : incomplete         ? fmt::format("not accepted: nothing failed, but {} (see why below)",
                                                              html_escape(fmt::format("{}", fmt::join(r.incomplete_reasons, "; "))))
                           : v == Level::Warn   ? "accepted, with warnings"
                                                : "accepted";
  return fmt::format(
      R"(<section id="verdict" class="verdict {cls}">
<div class="verdict-word">{word}</div>
<div class="verdict-detail">
<div class="verdict-note">{note}</div>
<div class="verdict-counts"><span class="count-label">{checks} checks</span> {check_tally}</div>
<div class="verdict-counts"><span class="count-label">{rules} rule verdicts</span> {rule_tally}</div>
<div class="verdict-thresholds">thresholds: <code>{file}</code> — {reason}</div>
</div>
</section>
)",
      fmt::arg("cls", fails_run(v) ? "fail" : incomplete ? "skip" : v == Level::Warn ? "warn" : "pass"), fmt::arg("word", word),
      fmt::arg("note", note), fmt::arg("checks", r.check_counts.total()),
      fmt::arg("check_tally", tally_text(r.check_counts)), fmt::arg("rules", r.rule_counts.total()),
      fmt::arg("rule_tally", tally_text(r.rule_counts, "NO DATA")), fmt::arg("file", html_escape(r.thresholds.file.string())),
      fmt::arg("reason", html_escape(r.thresholds.reason)));
}

std::string phases_section(const Report& r) {
  std::string rows;
  for (const auto& p : r.phases) {
    std::string files;
    for (const auto& s : p.sources)
      files += fmt::format(R"(<div class="source {}"><code>{}</code> {}{}</div>)", to_string(s.state),
                           html_escape(display_path(s.path, r.run_dir)), html_escape(to_string(s.state)),
                           s.problem.empty() ? "" : " — " + html_escape(s.problem));
    rows += fmt::format(
        R"(<tr class="phase-row" data-phase="{ph}"><td><a href="#phase-{ph}">{ph}</a></td><td>{status}</td><td>{files}</td><td>{checks}</td><td>{rules}</td></tr>
)",
        fmt::arg("ph", html_escape(p.phase)), fmt::arg("status", pill(p.status)), fmt::arg("files", files),
        fmt::arg("checks", tally_text(p.checks)), fmt::arg("rules", tally_text(p.rules, "NO DATA")));
  }
  return fmt::format(R"(<section id="phases"><h2>Phases</h2>
<table class="phases"><thead><tr><th>phase</th><th>status</th><th>files</th><th>checks</th><th>rule verdicts</th></tr></thead>
<tbody>
{}</tbody></table>
</section>
)",
                     rows);
}

std::string render_html(const Report& r) {
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gpuaccept report: {verdict} — {run}</title>
<style>
{css}
</style>
</head>
<body>
<header class="page-header">
<div class="title">gpuaccept acceptance report</div>
<div class="subtitle"><code>{run}</code> · generated {generated} · gpuaccept {version}</div>
<nav><a href="#verdict">verdict</a><a href="#failures">what failed</a><a href="#phases">phases</a>{regress_link}{actions_link}<a href="#nodes">nodes</a><a href="#fabric">fabric</a><a href="#plots">plots</a><a href="#inventory">inventory</a><a href="#details">checks</a></nav>
</header>
<main>
{verdict_section}
{failures}
{phases}
{floors}
{regressions}
{node_coverage}
{node_actions}
{grid}
{fabric}
{plots}
{inventory}
{details}
</main>
<footer>gpuaccept {version} · thresholds <code>{thresholds}</code> ({description})</footer>
</body>
</html>
)",
                     fmt::arg("verdict", verdict_word(r)),
                     fmt::arg("run", html_escape(r.run_dir)), fmt::arg("css", report_css()),
                     fmt::arg("generated", html_escape(r.generated_at)), fmt::arg("version", html_escape(r.tool_version)),
                     fmt::arg("regress_link", r.baseline ? R"(<a href="#regressions">what got worse</a>)" : ""),
                     fmt::arg("verdict_section", verdict_section(r)), fmt::arg("phases", phases_section(r)),
                     fmt::arg("failures", failures_section(r)), fmt::arg("floors", floors_section(r)),
                     fmt::arg("regressions", regressions_section(r)),
                     fmt::arg("node_coverage", node_coverage_section(r)), fmt::arg("node_actions", node_actions_section(r)),
                     fmt::arg("actions_link", node_actions_section(r).empty()
                                                  ? ""
                                                  : R"(<a href="#node-actions">nodes to take out and hand back</a>)"),
                     fmt::arg("grid", node_grid_section(r)), fmt::arg("fabric", fabric_section(r)),
                     fmt::arg("plots", plots_section(r)),
                     fmt::arg("inventory", inventory_section(r)), fmt::arg("details", phase_details_section(r)),
                     fmt::arg("thresholds", html_escape(r.thresholds.file.string())),
                     fmt::arg("description", html_escape(r.thresholds_description)));
}

}  // namespace gpuaccept::report
