// <results>/history.jsonl: one JSON line per report made, so next month's run can be set
// beside this one (gpuaccept-report --history, --baseline auto). A row holds the run id and
// directory, when, the Slurm cluster, the nodes, the verdict, the nodes drained and watched
// and the headline figures (model/headline.h).
//
// Appending is safe with several reports at once on a shared filesystem: under an exclusive
// lock on history.jsonl.lock the file is read, the row added, and the whole written beside
// it and renamed over it, so a reader never sees half a line and no writer's row is lost
// (O_APPEND alone is not atomic on NFS). A damaged line is skipped by readers, named.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/headline.h"
#include "model/report.h"

namespace gpuaccept::report {

struct HistoryRow {
  std::string run, run_dir, time, cluster, verdict;
  std::vector<std::string> nodes, drain, watch;
  std::vector<HeadlineFigure> figures;
};

struct History {
  std::vector<HistoryRow> rows;       // in file order: oldest first
  std::vector<std::string> problems;  // "history.jsonl:12: not a JSON object (...)", one per skipped line
};

HistoryRow history_row(const Report& report, const std::string& run_id, const std::string& cluster);
std::string history_line(const HistoryRow& row);  // one line of JSON, no newline

// Adds `row` to `file` as described above. Throws InputError naming the file on failure.
void append_history(const std::filesystem::path& file, const HistoryRow& row);

// A missing file is an empty history.
History read_history(const std::filesystem::path& file);

// The newest PASS run on the same set of nodes, other than `exclude_run_dir` (--baseline auto).
std::optional<std::filesystem::path> auto_baseline(const History& history, std::vector<std::string> nodes,
                                                   const std::filesystem::path& exclude_run_dir);

}  // namespace gpuaccept::report
