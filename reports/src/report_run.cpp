#include "report_run.h"

#include <cstdlib>
#include <fstream>

#include <unistd.h>

#include <fmt/format.h>

#include "common/error.h"
#include "common/log.h"
#include "html/html_report.h"
#include "model/report.h"
#include "output/drain_files.h"
#include "output/junit_xml.h"
#include "output/summary_json.h"
#include "run/loaded_run.h"
#include "run/node_inventory.h"
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
void write_text(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.parent_path() / fmt::format(".{}.tmp.{}", path.filename().string(), ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw InputError(fmt::format("cannot write {}: {}", tmp.string(), errno_text()));
  }
  fs::rename(tmp, path);
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

}  // namespace

int run_report(const ReportOptions& o) {
  const LoadedRun run = load_run(o.run_dir, o.expect_phases);
  InventoryTable inventory = inventory_table(run.documents("discover", "inventory"));
  const ThresholdChoice choice = choose_thresholds(o, inventory);
  const ThresholdSet thresholds = ThresholdSet::load(choice.file);

  std::optional<LoadedRun> baseline;
  if (!o.baseline_dir.empty()) baseline = load_run(o.baseline_dir, {});

  const Report report = build_report(run, std::move(inventory), thresholds, choice, baseline ? &*baseline : nullptr);

  const fs::path out = o.out_dir.empty() ? o.run_dir : o.out_dir;
  std::error_code ec;
  fs::create_directories(out, ec);
  if (!fs::is_directory(out)) throw InputError(fmt::format("output directory {}: cannot be created", out.string()));
  write_text(out / "report.html", render_html(report));
  write_text(out / "summary.json", summary_json_text(report));
  write_text(out / "junit.xml", junit_xml(report));
  // The nodes to hand back to Slurm; drain.sh is the operator's to run (make ... drain).
  fs::path run_path = o.run_dir.lexically_normal();
  if (run_path.filename().empty()) run_path = run_path.parent_path();  // "results/12/"
  const std::string run_id = run_path.filename().string();
  write_text(out / "bad-nodes.txt", hostlist_file_text(report.node_actions.drain));
  write_text(out / "watch-nodes.txt", hostlist_file_text(report.node_actions.watch));
  write_text(out / "drain.sh", drain_script_text(run_id, report.run_dir, report.node_actions));

  log_info("{}: {} ({} checks: {} failed, {} errors; {} rule verdicts: {} failed, {} warnings)", o.run_dir.string(),
           verdict_word(report), report.check_counts.total(),
           report.check_counts.count(Level::Fail), report.check_counts.count(Level::Error), report.rule_counts.total(),
           report.rule_counts.count(Level::Fail), report.rule_counts.count(Level::Warn));
  log_info("thresholds: {} ({})", choice.file.string(), choice.reason);
  log_info("wrote {}, summary.json, junit.xml, bad-nodes.txt, watch-nodes.txt, drain.sh", (out / "report.html").string());
  if (!report.node_actions.drain.empty())
    log_info("nodes to drain: {} (make -f Makefile.slurm drain RUN={})", hostlist_of(report.node_actions.drain),
             o.run_dir.string());
  if (!report.node_actions.watch.empty()) log_info("nodes to watch: {}", hostlist_of(report.node_actions.watch));
  return exit_code(report);
}

}  // namespace gpuaccept::report
