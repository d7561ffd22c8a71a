#include "smoke/cpu_set.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <iterator>

namespace gpuaccept::smoke {

namespace {
std::optional<int> to_int(std::string_view s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}
}  // namespace

std::optional<CpuSet> parse_cpu_list(std::string_view list) {
  CpuSet out;
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    while (!item.empty() && (item.back() == '\n' || item.back() == ' ')) item.remove_suffix(1);
    if (item.empty()) continue;
    const auto dash = item.find('-');
    const auto lo = to_int(item.substr(0, dash));
    const auto hi = dash == std::string_view::npos ? lo : to_int(item.substr(dash + 1));
    if (!lo || !hi || *hi < *lo) return std::nullopt;
    for (int c = *lo; c <= *hi; ++c) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

CpuSet cpu_intersection(const CpuSet& a, const CpuSet& b) {
  CpuSet out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

bool cpu_subset(const CpuSet& sub, const CpuSet& super) {
  return std::includes(super.begin(), super.end(), sub.begin(), sub.end());
}

CpuSet current_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CpuSet out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

}  // namespace gpuaccept::smoke
