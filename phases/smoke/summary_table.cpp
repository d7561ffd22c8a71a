#include "smoke/summary_table.h"

#include <cmath>

#include <fmt/format.h>

namespace gpuaccept::smoke {

namespace {
// Params that tell records of one test apart; paths and sizes stay in the file.
std::string key_params(const Params& p) {
  std::string out;
  for (const auto& [k, v] : p) {
    if (k == "dir" || k == "gres" || k == "bits" || k == "source" || k == "limit_c") continue;
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, v);
  }
  return out;
}
}  // namespace

std::string format_records_table(const std::vector<Record>& records, std::size_t message_width) {
  std::string out = fmt::format("{:<7}{:<4}{:<22}{:<34}{:>12} {:<8} {}\n", "STATUS", "GPU", "TEST", "PARAMS", "VALUE",
                                "UNIT", "MESSAGE");
  for (const auto& r : records) {
    std::string msg = r.message;
    if (message_width > 0 && msg.size() > message_width) msg = msg.substr(0, message_width - 3) + "...";
    const std::string value = r.has_value() ? fmt::format("{:.2f}", r.value) : "-";
    out += fmt::format("{:<7}{:<4}{:<22}{:<34}{:>12} {:<8} {}\n", to_string(r.status),
                       r.gpu_index < 0 ? "-" : std::to_string(r.gpu_index), r.test, key_params(r.params), value,
                       r.unit, msg);
  }
  return out;
}

}  // namespace gpuaccept::smoke
