// Small building blocks of the report's HTML. Every argument that may come from a
// results or config file goes through html_escape here, so section code cannot forget.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "model/level.h"
#include "results/record.h"
#include "thresholds/rule_verdict.h"

namespace gpuaccept::report {

std::string pill(Level l);                                        // <span class="pill fail">FAIL</span>
std::string cell(std::string_view text, std::string_view css_class = "");  // <td class="...">text</td>
std::string params_text(const Params& p);                          // "bytes=33554432 dtype=float"
std::string value_text(const Record& r);                           // "612.0" or "-"
// A results file's path as shown: relative to the run directory when inside it.
std::string display_path(const std::filesystem::path& p, const std::string& run_dir);
// What a verdict demanded: "≥ 711", "≤ 0", "≥ 680.0 (median 800.0 − 15%)", "≥ 40.0 (0.8 × 400 Gb/s)".
std::string demand_text(const RuleVerdict& v);
// A rule's demands in general, for the rules table: "≥ 711", "≥ median − 10%", "≥ 0.8 × line rate".
std::string demand_text(const Rule& rule);

}  // namespace gpuaccept::report
