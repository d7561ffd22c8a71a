#include "nccl-scaling/table.h"

#include <fmt/format.h>

namespace gpuaccept::nccl_scaling {

std::string format_time_us(double us) {
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

std::string format_table_header() {
  std::string h;
  h += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place\n", "", "",
                   "", "", "");
  h += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}\n",
                   "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
                   "#wrong");
  h += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}", "(B)",
                   "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  return h;
}

namespace {

std::string placement(const PlacementFigures& p) {
  if (!p.run) return fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", "-", "-", "-", "-");
  const std::string wrong = p.wrong < 0 ? std::string("N/A") : fmt::format("{}", p.wrong);
  return fmt::format("  {}  {:6.2f}  {:6.2f}  {:>6}", format_time_us(p.time_us), p.algbw, p.busbw, wrong);
}

}  // namespace

std::string format_table_row(const TableRow& r) {
  return fmt::format("  {:>10}  {:>12}  {:>8}  {:>6}  {:>6}", r.size_bytes, r.count, r.type, r.redop, r.root) +
         placement(r.out_of_place) + placement(r.in_place);
}

std::string format_table(const std::string& title, const std::vector<TableRow>& rows) {
  std::string out = "# " + title + "\n" + format_table_header() + "\n";
  double sum = 0;
  int n = 0;
  for (const auto& r : rows) {
    out += format_table_row(r) + "\n";
    for (const auto* p : {&r.out_of_place, &r.in_place})
      if (p->run) {
        sum += p->busbw;
        ++n;
      }
  }
  out += fmt::format("# Avg bus bandwidth    : {:g}", n ? sum / n : 0.0);
  return out;
}

}  // namespace gpuaccept::nccl_scaling
