// The report as a program: options in, three files and an exit code out.
//   0: PASS, nothing FAILs or ERRORs; 1: something does; 2: unusable input (no run
//   directory, a malformed thresholds file: the message names file, line and key);
//   3: INCOMPLETE, nothing failed but a phase measured nothing (all SKIP).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gpuaccept::report {

struct ReportOptions {
  std::filesystem::path run_dir;
  std::filesystem::path thresholds_file;  // --thresholds: overrides the choice by GPU model
  std::filesystem::path thresholds_dir;   // --thresholds-dir, else default_thresholds_dir()
  std::filesystem::path out_dir;          // --out, else run_dir
  std::filesystem::path baseline_dir;     // --baseline: "what got worse" against this run; "auto": the
                                          // newest PASS run on the same nodes in history.jsonl
  std::filesystem::path metrics_file;     // --metrics: the Prometheus/OpenMetrics text (metrics_text.h)
  bool record_history = true;             // add a row to <results>/history.jsonl (--no-history: don't)
  std::filesystem::path history_of;       // --history RESULTS: render RESULTS/history.html instead
  std::vector<std::string> expect_phases;  // --expect-phases: a missing one is an ERROR
};

inline constexpr int kExitUnusableInput = 2;

// $GPUACCEPT_THRESHOLDS_DIR, else configs/thresholds found relative to this binary:
// build/bin -> the source tree, or an installed <prefix>/share/gpuaccept/thresholds.
std::filesystem::path default_thresholds_dir();

// Writes report.html, summary.json and junit.xml; returns the exit code.
// Throws InputError for unusable input.
int run_report(const ReportOptions& options);

// --history: <results>/history.jsonl to <results>/history.html; returns the exit code (0).
int run_history_report(const ReportOptions& options);

}  // namespace gpuaccept::report
