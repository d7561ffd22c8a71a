// The sections of report.html, in page order. Each returns an HTML fragment; all
// text from the run goes through html_escape (directly or via html_util.h).
#pragma once

#include <string>

#include "model/report.h"

namespace gpuaccept::report {

std::string verdict_section(const Report& r);        // PASS/FAIL, counts, the thresholds used
std::string phases_section(const Report& r);         // one row per phase
std::string failures_section(const Report& r);       // what failed: value, bound, rule
std::string regressions_section(const Report& r);    // what got worse than the baseline
std::string floors_section(const Report& r);         // absolute floors that did not apply, and why ("" if none)
std::string node_actions_section(const Report& r);   // nodes to drain and to watch, and the commands
std::string node_grid_section(const Report& r);      // node x GPU, coloured by worst level
std::string plots_section(const Report& r);          // NCCL, GEMM, memory, training
std::string inventory_section(const Report& r);      // hosts, GPUs, versions; differences marked
std::string phase_details_section(const Report& r);  // per phase: rules and every check

}  // namespace gpuaccept::report
