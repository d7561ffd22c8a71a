#include "html/history_html.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "html/charts.h"
#include "html/html_escape.h"
#include "html/html_style.h"
#include "slurm/slurm_api.h"

namespace gpuaccept::report {

namespace {

std::string verdict_pill(const std::string& verdict) {
  const char* cls = verdict == "PASS" ? "pass" : verdict == "FAIL" ? "fail" : "skip";
  return fmt::format(R"(<span class="pill {}">{}</span>)", cls, html_escape(verdict));
}

std::string runs_table(const History& h) {
  std::string rows;
  for (auto it = h.rows.rbegin(); it != h.rows.rend(); ++it)
    rows += fmt::format("<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{} <code>{}</code></td><td>{}</td>"
                        "<td><code>{}</code></td><td><code>{}</code></td></tr>\n",
                        html_escape(it->time), html_escape(it->run), html_escape(it->cluster), it->nodes.size(),
                        html_escape(compress_hostlist(it->nodes)), verdict_pill(it->verdict),
                        html_escape(compress_hostlist(it->drain)), html_escape(it->run_dir));
  return fmt::format(R"(<section id="runs"><h2>Runs</h2>
<table><thead><tr><th>time</th><th>run</th><th>cluster</th><th>nodes</th><th>verdict</th><th>drained</th><th>directory</th></tr></thead>
<tbody>
{}</tbody></table></section>
)",
                     rows);
}

// One chart per figure name (and NCCL scale: a chart of 24 lines reads as none), one line
// per remaining label set; x is the run's place in the history.
std::string trend_charts(const History& h) {
  std::map<std::string, LineChart> charts;
  for (std::size_t i = 0; i < h.rows.size(); ++i) {
    for (const auto& f : h.rows[i].figures) {
      std::string key = f.name, series;
      for (const auto& [k, v] : f.labels) {
        if (k == "scale") key += " " + v;
        else series += (series.empty() ? "" : " ") + (k == "collective" || k == "dtype" || k == "kind" ? v : k + "=" + v);
      }
      LineChart& c = charts[key];
      c.title = fmt::format("{} ({})", key, f.unit);
      c.x_label = "run (oldest first)";
      c.y_label = f.unit;
      auto s = std::find_if(c.series.begin(), c.series.end(), [&](const ChartSeries& x) { return x.name == series; });
      if (s == c.series.end()) s = c.series.insert(c.series.end(), ChartSeries{series, {}});
      s->points.emplace_back(static_cast<double>(i + 1), f.value);
    }
  }
  std::string body;
  for (const auto& [key, chart] : charts) body += "<figure>" + render_svg(chart) + "</figure>\n";
  if (body.empty()) body = R"(<p class="muted">No run in the history measured a headline figure.</p>)";
  return fmt::format(R"(<section id="trends"><h2>Headline figures over time</h2>
{}</section>
)",
                     body);
}

// Nodes drained in at least two of their last kRecentRuns runs.
std::string recurring_failures(const History& h) {
  std::map<std::string, std::pair<int, int>> tally;  // node -> (drained, runs looked at)
  for (auto it = h.rows.rbegin(); it != h.rows.rend(); ++it)
    for (const auto& node : it->nodes) {
      auto& [drained, seen] = tally[node];
      if (seen == kRecentRuns) continue;
      ++seen;
      if (std::find(it->drain.begin(), it->drain.end(), node) != it->drain.end()) ++drained;
    }
  std::string rows;
  for (const auto& [node, t] : tally)
    if (t.first >= 2)
      rows += fmt::format("<tr><td>{}</td><td>failed in {} of its last {} runs</td></tr>\n", html_escape(node), t.first,
                          t.second);
  if (rows.empty())
    return fmt::format(R"(<section id="recurring"><h2>Nodes that keep failing</h2><p class="muted">No node was drained in two or more of its last {} runs.</p></section>
)",
                       kRecentRuns);
  return fmt::format(R"(<section id="recurring"><h2>Nodes that keep failing</h2>
<table><thead><tr><th>node</th><th>drained</th></tr></thead><tbody>
{}</tbody></table></section>
)",
                     rows);
}

}  // namespace

std::string render_history_html(const History& h, const std::string& results_dir) {
  std::string problems;
  for (const auto& p : h.problems) problems += "<li>" + html_escape(p) + "</li>\n";
  if (!problems.empty()) problems = "<section><h2>Lines skipped</h2><ul>\n" + problems + "</ul></section>\n";
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>gpuaccept history — {dir}</title>
<style>
{css}
</style>
</head>
<body>
<header class="page-header">
<div class="title">gpuaccept history</div>
<div class="subtitle"><code>{dir}</code> · {n} runs</div>
</header>
<main>
{recurring}
{trends}
{runs}
{problems}
</main>
</body>
</html>
)",
                     fmt::arg("dir", html_escape(results_dir)), fmt::arg("css", report_css()),
                     fmt::arg("n", h.rows.size()), fmt::arg("recurring", recurring_failures(h)),
                     fmt::arg("trends", trend_charts(h)), fmt::arg("runs", runs_table(h)),
                     fmt::arg("problems", problems));
}

}  // namespace gpuaccept::report
