// summary.json: the report for machines (CI, dashboards). Every check and every rule
// verdict, the verdict and each phase's status; layout version "gpuaccept_report": 1.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "model/report.h"

namespace gpuaccept::report {

inline constexpr int kSummaryFormatVersion = 1;

nlohmann::json summary_json(const Report& report);

// The JSON text; strings that are not valid UTF-8 (a corrupt record) are repaired
// with U+FFFD rather than failing the whole report.
// The same as text, written to `out` piece by piece (no whole-document DOM in memory).
void write_summary_json(std::ostream& out, const Report& report);
std::string summary_json_text(const Report& report);

}  // namespace gpuaccept::report
