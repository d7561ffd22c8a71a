// history.html (gpuaccept-report --history RESULTS): every run of history.jsonl, newest
// first; one trend chart per headline figure; the nodes that keep failing.
#pragma once

#include <string>

#include "output/history.h"

namespace gpuaccept::report {

// How many of a node's latest runs the recurring-failure table looks at.
inline constexpr int kRecentRuns = 5;

std::string render_history_html(const History& history, const std::string& results_dir);

}  // namespace gpuaccept::report
