#include "report_run.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <set>

#include <unistd.h>

#include <fmt/format.h>

#include "common/error.h"
#include "common/log.h"
#include "html/html_report.h"
#include "model/report.h"
#include "output/drain_files.h"
#include "html/history_html.h"
#include "output/history.h"
#include "output/junit_xml.h"
#include "output/metrics_text.h"
#include "output/resume_files.h"
#include "output/summary_json.h"
#include "run/loaded_run.h"
#include "run/node_inventory.h"
#include "slurm/slurm_api.h"
#include "thresholds/threshold_selection.h"
#include "thresholds/threshold_set.h"

namespace gpuaccept::report {
namespace fs = std::filesystem;

fs::path default_thresholds_dir() {
  if (const char* env = std::getenv("GPUACCEPT_THRESHOLDS_DIR"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path bin = ec ? fs::current_path() : exe.parent_path();
  const fs::path candidates[] = {
      bin / "../../configs/thresholds",            // <repo>/build/bin/gpuaccept-report
      bin / "../share/gpuaccept/thresholds",       // <prefix>/bin after an install
      bin / "../configs/thresholds",               // a flat copy next to configs/
  };
  for (const auto& c : candidates)
    if (fs::is_directory(c)) return fs::weakly_canonical(c);
  return fs::weakly_canonical(candidates[0]);  // does not exist: the error message names it
}

namespace {

// Written beside the target and renamed into place, so a browser or CI job never
// reads half a report.
void write_file(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  const fs::path tmp = path.parent_path() / fmt::format(".{}.tmp.{}", path.filename().string(), ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    write(out);
    out.close();
    if (!out) throw InputError(fmt::format("cannot write {}: {}", tmp.string(), errno_text()));
  }
  fs::rename(tmp, path);
}

void write_text(const fs::path& path, const std::string& text) {
  write_file(path, [&](std::ostream& out) { out << text; });
}

ThresholdChoice choose_thresholds(const ReportOptions& o, const InventoryTable& inventory) {
  if (!o.thresholds_file.empty()) {
    if (!fs::exists(o.thresholds_file))
      throw InputError(fmt::format("thresholds file {}: does not exist", o.thresholds_file.string()));
    return {o.thresholds_file, "", "given with --thresholds"};
  }
  const fs::path dir = o.thresholds_dir.empty() ? default_thresholds_dir() : o.thresholds_dir;
  return select_threshold_file(inventory.gpu_names(), dir);
}

// The run's directory without a trailing '/': its name is the run id, its parent the results root.
fs::path run_path_of(const fs::path& run_dir) {
  fs::path p = run_dir.lexically_normal();
  return p.filename().empty() ? p.parent_path() : p;
}

std::string first_attribute(const LoadedRun& run, const std::string& name) {
  for (const auto& s : run.sources)
    if (auto it = s.attributes.find(name); it != s.attributes.end() && !it->second.empty()) return it->second;
  return {};
}

std::vector<std::string> nodes_of(const LoadedRun& run) {
  std::set<std::string> nodes;
  for (const auto& r : run.records)
    if (!r.node.empty()) nodes.insert(r.node);
  return {nodes.begin(), nodes.end()};
}

// --baseline auto: the newest PASS run on the same nodes, from the results root's history.
fs::path auto_baseline_dir(const fs::path& run_path, const LoadedRun& run) {
  const fs::path file = run_path.parent_path() / "history.jsonl";
  const History h = read_history(file);
  for (const auto& p : h.problems) log_info("warning: {}", p);
  const auto found = auto_baseline(h, nodes_of(run), run_path);
  if (!found) {
    log_info("--baseline auto: no earlier PASS run on the same nodes in {}; no comparison", file.string());
    return {};
  }
  log_info("--baseline auto: {} (the newest PASS run on the same nodes in {})", found->string(), file.string());
  return *found;
}

}  // namespace

int run_report(const ReportOptions& o) {
  const fs::path run_path = run_path_of(o.run_dir);
  LoadedRun run = load_run(o.run_dir, o.expect_phases);
  InventoryTable inventory = inventory_table(run.documents("discover", "inventory"));
  const ThresholdChoice choice = choose_thresholds(o, inventory);
  const ThresholdSet thresholds = ThresholdSet::load(choice.file);

  std::optional<LoadedRun> baseline;
  const fs::path baseline_dir = o.baseline_dir == "auto" ? auto_baseline_dir(run_path, run) : o.baseline_dir;
  if (!baseline_dir.empty()) baseline = load_run(baseline_dir, {});

  const Report report = build_report(run, std::move(inventory), thresholds, choice, baseline ? &*baseline : nullptr);
  // The report holds its own copy of every record; at 8,192 ranks the run's is half a GB.
  std::vector<Record>().swap(run.records);
  if (baseline) std::vector<Record>().swap(baseline->records);

  const fs::path out = o.out_dir.empty() ? o.run_dir : o.out_dir;
  std::error_code ec;
  fs::create_directories(out, ec);
  if (!fs::is_directory(out)) throw InputError(fmt::format("output directory {}: cannot be created", out.string()));
  write_text(out / "report.html", render_html(report));
  write_file(out / "summary.json", [&](std::ostream& o) { write_summary_json(o, report); });
  write_text(out / "junit.xml", junit_xml(report));
  // The nodes to hand back to Slurm; drain.sh is the operator's to run (make ... drain).
  const std::string run_id = run_path.filename().string();
  write_text(out / "bad-nodes.txt", hostlist_file_text(report.node_actions.drain));
  write_text(out / "watch-nodes.txt", hostlist_file_text(report.node_actions.watch));
  write_text(out / "drain.sh", drain_script_text(run_id, report.run_dir, report.node_actions));
  write_text(out / "good-nodes.txt", good_nodes_file_text(report.good_nodes));
  write_text(out / "resume.sh", resume_script_text(run_id, report.run_dir, report.good_nodes));

  if (!o.metrics_file.empty()) {
    write_text(o.metrics_file, metrics_text(report, run_id, static_cast<double>(std::time(nullptr))));
    log_info("wrote metrics {}", o.metrics_file.string());
  }
  if (o.record_history) {
    const fs::path history = run_path.parent_path() / "history.jsonl";
    try {  // the report itself is written: a history that cannot be kept is said, not fatal
      append_history(history, history_row(report, run_id, first_attribute(run, "slurm_cluster")));
    } catch (const std::exception& e) {
      log_error("{} (the report is written; --no-history leaves the history alone)", e.what());
    }
  }

  log_info("{}: {} ({} checks: {} failed, {} errors; {} rule verdicts: {} failed, {} warnings)", o.run_dir.string(),
           verdict_word(report), report.check_counts.total(),
           report.check_counts.count(Level::Fail), report.check_counts.count(Level::Error), report.rule_counts.total(),
           report.rule_counts.count(Level::Fail), report.rule_counts.count(Level::Warn));
  log_info("thresholds: {} ({})", choice.file.string(), choice.reason);
  log_info("wrote {}, summary.json, junit.xml, bad-nodes.txt, watch-nodes.txt, drain.sh, good-nodes.txt, resume.sh",
           (out / "report.html").string());
  if (!report.node_actions.drain.empty())
    log_info("nodes to drain: {} (make -f Makefile.slurm drain RUN={})", hostlist_of(report.node_actions.drain),
             o.run_dir.string());
  if (!report.node_actions.watch.empty()) log_info("nodes to watch: {}", hostlist_of(report.node_actions.watch));
  if (!report.node_coverage.same_nodes())
    log_info("phases on different nodes: {}", missed_phases_text(report.node_coverage, 8));
  if (!report.good_nodes.nodes.empty())
    log_info("nodes that passed every phase: {} (make -f Makefile.slurm resume RUN={})",
             compress_hostlist(report.good_nodes.nodes), o.run_dir.string());
  else
    log_info("no node passed every phase{}", report.good_nodes.held_back.empty()
                                                 ? std::string()
                                                 : fmt::format(" ({}: {})", report.good_nodes.held_back[0].node,
                                                               report.good_nodes.held_back[0].why));
  return exit_code(report);
}

int run_history_report(const ReportOptions& o) {
  const fs::path file = o.history_of / "history.jsonl";
  if (!fs::exists(file)) throw InputError(fmt::format("history {}: does not exist (each report adds a row to it)", file.string()));
  const History h = read_history(file);
  for (const auto& p : h.problems) log_info("warning: {}", p);
  write_text(o.history_of / "history.html", render_history_html(h, o.history_of.string()));
  log_info("wrote {} ({} runs)", (o.history_of / "history.html").string(), h.rows.size());
  return 0;
}

}  // namespace gpuaccept::report
