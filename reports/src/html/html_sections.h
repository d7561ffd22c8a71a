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
std::string node_coverage_section(const Report& r);  // where the phases ran, when not all on one node set
std::string floors_section(const Report& r);         // absolute floors that did not apply, and why ("" if none)
std::string node_actions_section(const Report& r);   // nodes to drain, to watch and to hand back, and the commands
std::string node_grid_section(const Report& r);      // node x GPU, coloured by worst level
std::string fabric_section(const Report& r);         // ports, counters, transports, line rate, node pairs
std::string plots_section(const Report& r);          // NCCL, GEMM, memory, training
std::string inventory_section(const Report& r);      // hosts, GPUs, versions; differences marked
std::string phase_details_section(const Report& r);  // per phase: rules and every check

}  // namespace gpuaccept::report
