// gpuaccept-report: judges a run directory's results by its GPU model's thresholds and
// writes report.html, summary.json and junit.xml (see report_run.h for exit codes).
#include <CLI/CLI.hpp>

#include "common/error.h"
#include "common/log.h"
#include "report_run.h"

using namespace gpuaccept;

int main(int argc, char** argv) {
  log_context().phase = "report";
  report::ReportOptions o;
  CLI::App app{"Acceptance report for one gpuaccept run directory: report.html, summary.json, junit.xml.\n"
               "Exit code 0: nothing FAILs or ERRORs; 1: something does; 2: unusable input."};
  app.add_option("RUN_DIR", o.run_dir, "the run directory: <results>/<run id> with the phases' *.h5 files");
  app.add_option("--thresholds", o.thresholds_file, "threshold file to use instead of choosing one by GPU model");
  app.add_option("--thresholds-dir", o.thresholds_dir,
                 "where threshold files are chosen from by GPU model (default: $GPUACCEPT_THRESHOLDS_DIR, else the "
                 "repository's configs/thresholds found from this binary)");
  app.add_option("--out", o.out_dir, "where to write the report files (default: RUN_DIR)");
  app.add_option("--baseline", o.baseline_dir,
                 "an earlier run directory to compare with: what got more than 5% worse; 'auto': the newest PASS run on "
                 "the same nodes in <results>/history.jsonl");
  app.add_option("--metrics", o.metrics_file,
                 "also write the headline figures and per-node states in the Prometheus text format to this file "
                 "(for node_exporter's textfile collector)");
  bool no_history = false;
  app.add_flag("--no-history", no_history, "do not add this run to <results>/history.jsonl");
  app.add_option("--history", o.history_of,
                 "instead of a run's report: RESULTS/history.html from RESULTS/history.jsonl (runs, trends, nodes "
                 "that keep failing)");
  app.add_option("--expect-phases", o.expect_phases,
                 "phases that must be present, e.g. discover,smoke,nccl-scaling,ddp,fsdp-lora; a missing one is an ERROR")
      ->delimiter(',');
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : report::kExitUnusableInput;
  }
  o.record_history = !no_history;
  if (o.run_dir.empty() == o.history_of.empty()) {
    log_error("give a RUN_DIR, or --history RESULTS (not both)");
    return report::kExitUnusableInput;
  }
  try {
    if (!o.history_of.empty()) return report::run_history_report(o);
    return report::run_report(o);
  } catch (const InputError& e) {
    log_error("{}", e.what());
    return report::kExitUnusableInput;
  } catch (const std::exception& e) {
    log_error("unexpected: {}", e.what());
    return report::kExitUnusableInput;
  }
}
