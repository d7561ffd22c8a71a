#include "html/html_checkpoints.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "html/charts.h"
#include "html/html_escape.h"
#include "html/html_util.h"
#include "html/report_figures.h"
#include "thresholds/record_label.h"

namespace gpuaccept::report {

namespace {

constexpr const char* kNodeMetric = "node_write_bandwidth";  // checkpoint_save's record per node

// One drill: what a job recorded of it. A phase saves once per job, so a run directory holds
// one drill per job that ran the phase; a figure recorded twice in one job (a second file of
// the phase from the same job) shows its first record.
struct Drill {
  std::string job_id;
  std::string step;  // from the first record that names it (a rank's checkpoint_save)
  std::map<std::pair<std::string, std::string>, const Record*> job_level;  // (test, metric): "" for the check

  const Record* find(const std::string& test, const std::string& metric = "") const {
    const auto it = job_level.find({test, metric});
    return it == job_level.end() ? nullptr : it->second;
  }
};

std::vector<Drill> drills_of(const Report& r, const std::string& phase) {
  std::vector<Drill> drills;
  for (const auto& rec : r.checks) {
    if (rec.phase != phase || !rec.test.starts_with("checkpoint_")) continue;
    auto it = std::find_if(drills.begin(), drills.end(), [&](const Drill& d) { return d.job_id == rec.job_id; });
    if (it == drills.end()) it = drills.insert(drills.end(), Drill{rec.job_id, {}, {}});
    // Told from the records about one node (rank -1 too: the chart's) by their metric, not by an
    // empty node: a record made with ResultWriter::measure() and then set to rank -1 keeps the
    // hostname of rank 0 that add() filled in.
    if (rec.rank == kJobLevel && rec.metric != kNodeMetric) it->job_level.emplace(std::pair(rec.test, rec.metric), &rec);
    if (const auto step = rec.params.find("step"); it->step.empty() && step != rec.params.end()) it->step = step->second;
  }
  return drills;
}

// A record's message on hover.
std::string title_attribute(const Record& rec) {
  return rec.message.empty() ? "" : fmt::format(R"( title="{}")", html_escape(rec.message));
}

// A figure's cell: its value, and the rules' level beside it when a rule flagged it.
std::string figure_cell(const Report& r, const Record* rec, std::string (*format)(double) = format_value) {
  if (!rec || !rec->has_value()) return cell("-", "num");
  const Level rule_level = r.rule_level(*rec);
  const bool flagged = rule_level == Level::Warn || fails_run(rule_level);
  return fmt::format(R"(<td class="num"{}>{}{}</td>)", title_attribute(*rec), html_escape(format(rec->value)),
                     flagged ? " " + pill(rule_level) : "");
}

// A check's cell: its status (the message on hover), or its status and message.
std::string check_cell(const Record* rec, bool with_message) {
  if (!rec) return cell("-");
  if (with_message)
    return fmt::format(R"(<td class="message">{} {}</td>)", pill(level_of(rec->status)), html_escape(rec->message));
  return fmt::format("<td{}>{}</td>", title_attribute(*rec), pill(level_of(rec->status)));
}

std::string drill_row(const Report& r, const Drill& d, bool with_job) {
  return fmt::format("<tr>{}{}{}{}{}{}{}{}{}{}{}{}</tr>\n", with_job ? cell(d.job_id, "nowrap") : "",
                     cell(d.step.empty() ? "-" : d.step, "num"), figure_cell(r, d.find("checkpoint_save", "bytes"), format_bytes),
                     figure_cell(r, d.find("checkpoint_save", "seconds_to_consistent")),
                     figure_cell(r, d.find("checkpoint_save", "aggregate_write_bandwidth")),
                     figure_cell(r, d.find("checkpoint_baseline", "aggregate_write_bandwidth")),
                     figure_cell(r, d.find("checkpoint_efficiency", "write_vs_sequential")),
                     figure_cell(r, d.find("checkpoint_restore", "aggregate_read_bandwidth")),
                     figure_cell(r, d.find("checkpoint_baseline", "aggregate_read_bandwidth")),
                     check_cell(d.find("checkpoint_save"), false), check_cell(d.find("checkpoint_restore"), false),
                     check_cell(d.find("checkpoint_resume"), true));
}

}  // namespace

std::string checkpoint_part(const Report& r, const std::string& phase) {
  const std::vector<Drill> drills = drills_of(r, phase);
  if (drills.empty()) return {};
  const bool with_job = drills.size() > 1;
  std::string rows;
  for (const Drill& d : drills) rows += drill_row(r, d, with_job);
  std::string charts;
  for (const auto& c : per_node_charts(r, phase, "checkpoint_save", kNodeMetric, "Checkpoint write bandwidth per node"))
    charts += "<figure>" + render_svg(c) + "</figure>\n";
  return fmt::format(R"(<h4>Training checkpoints</h4>
<p class="muted">The training state saved at one step to the shared filesystem, every rank its slice at once, beside a
dd-style sequential write (fsync'd) and read of the same bytes by the same ranks; then restored, and the run resumed
from it compared bit for bit with the run that never stopped. Aggregates are over all ranks.</p>
<table class="checkpoints"><thead><tr>{}<th>step</th><th>size</th><th>to consistent (s)</th><th>write GB/s</th><th>dd write GB/s</th><th>write vs dd (%)</th><th>read GB/s</th><th>dd read GB/s</th><th>save</th><th>restore</th><th>resume</th></tr></thead>
<tbody>
{}</tbody></table>
{})",
                     with_job ? "<th>job</th>" : "", rows,
                     charts.empty() ? "" : R"(<div class="charts">)" + charts + "</div>\n");
}

}  // namespace gpuaccept::report
