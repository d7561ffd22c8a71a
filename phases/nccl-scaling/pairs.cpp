#include "nccl-scaling/pairs.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace gpuaccept::nccl_scaling {

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string end_name(const PairResult& r, const std::string& end) {
  return r.node.empty() ? end : fmt::format("{} GPU {}", r.node, end);
}

std::string pair_name(const PairResult& r) {
  return r.node.empty() ? fmt::format("{} - {}", r.a, r.b) : fmt::format("{} GPU {} - GPU {}", r.node, r.a, r.b);
}

}  // namespace

std::vector<PairVerdict> judge_pairs(const std::vector<PairResult>& results, double outlier_pct, double* median) {
  std::vector<double> values;
  for (const auto& r : results)
    if (r.measured && r.wrong == 0) values.push_back(r.busbw);
  const double med = median_of(values);
  if (median) *median = med;
  const double limit = med * (1 - outlier_pct / 100);

  std::vector<PairVerdict> out(results.size());
  // Per end: pairs measured, pairs slow. An end in most of its pairs' failures is the suspect.
  std::map<std::string, std::pair<int, int>> per_end;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    auto& v = out[i];
    if (!r.measured) {
      v.status = Status::Fail;
      v.message = fmt::format("{}: not measured: {}", pair_name(r), r.error.empty() ? "unknown" : r.error);
    } else if (r.wrong != 0) {
      v.status = Status::Fail;
      v.message = fmt::format("{}: {} wrong elements in the result (data corruption on this path)", pair_name(r), r.wrong);
    } else if (r.busbw < limit) {
      v.status = Status::Fail;
      v.message = fmt::format("{}: {:.1f} GB/s is {:.0f}% below the median {:.1f} GB/s (limit {:.0f}%)", pair_name(r),
                              r.busbw, 100 * (1 - r.busbw / med), med, outlier_pct);
    } else {
      v.message = fmt::format("{}: {:.1f} GB/s (median {:.1f} GB/s)", pair_name(r), r.busbw, med);
    }
    for (const auto& end : {end_name(r, r.a), end_name(r, r.b)}) {
      auto& [total, slow] = per_end[end];
      ++total;
      if (v.status == Status::Fail) ++slow;
    }
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (out[i].status != Status::Fail) continue;
    std::vector<std::string> suspects;
    for (const auto& end : {end_name(results[i], results[i].a), end_name(results[i], results[i].b)}) {
      const auto [total, slow] = per_end[end];
      // Most of its pairs slow, and more than one (a single slow pair blames both ends alike).
      if (slow >= 2 && 2 * slow > total) suspects.push_back(fmt::format("{} is in {} of its {} pairs that failed", end, slow, total));
    }
    if (!suspects.empty()) out[i].message += fmt::format("; {}", fmt::join(suspects, "; "));
  }
  return out;
}

std::string format_pair_matrix(const std::vector<std::string>& labels, const std::vector<PairResult>& results,
                               const std::vector<PairVerdict>& verdicts) {
  std::string out;
  if (labels.size() > 32) {
    int failed = 0;
    for (std::size_t i = 0; i < results.size(); ++i)
      if (verdicts[i].status == Status::Fail) {
        out += verdicts[i].message;
        out += '\n';
        ++failed;
      }
    if (failed == 0) out += fmt::format("all {} pairs within the limit\n", results.size());
    return out;
  }
  auto index = [&](const std::string& l) {
    return static_cast<int>(std::find(labels.begin(), labels.end(), l) - labels.begin());
  };
  const std::size_t n = labels.size();
  std::vector<std::vector<std::string>> cell(n, std::vector<std::string>(n, "."));
  for (std::size_t i = 0; i < n; ++i) cell[i][i].assign(1, '-');
  for (std::size_t k = 0; k < results.size(); ++k) {
    const int i = index(results[k].a), j = index(results[k].b);
    if (i >= static_cast<int>(n) || j >= static_cast<int>(n)) continue;
    std::string text = results[k].measured ? fmt::format("{:.1f}", results[k].busbw) : "n/a";
    if (verdicts[k].status == Status::Fail) text += "*";
    cell[i][j] = cell[j][i] = text;
  }
  std::size_t width = 7, label_width = 4;
  for (const auto& l : labels) label_width = std::max(label_width, l.size());
  for (const auto& row : cell)
    for (const auto& c : row) width = std::max(width, c.size() + 1);
  out += fmt::format("{:>{}}", "", label_width);
  for (std::size_t j = 0; j < n; ++j) out += fmt::format(" {:>{}}", fmt::format("[{}]", j), width);
  out += "\n";
  for (std::size_t i = 0; i < n; ++i) {
    out += fmt::format("{:>{}}", fmt::format("[{}]", i), label_width);
    for (std::size_t j = 0; j < n; ++j) out += fmt::format(" {:>{}}", cell[i][j], width);
    out += fmt::format("  {}\n", labels[i]);
  }
  out += "busbw in GB/s; * below the limit or wrong data; . not paired\n";
  return out;
}

}  // namespace gpuaccept::nccl_scaling
