#include "slurm/gres.h"

#include <charconv>
#include <optional>
#include <string>
#include <vector>

namespace gpuaccept {

namespace {

// Splits on commas outside parentheses: "(S:0,2)" holds a comma of its own.
std::vector<std::string_view> split_entries(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || (s[i] == ',' && depth == 0)) {
      if (i > start) out.push_back(s.substr(start, i - start));
      start = i + 1;
    } else if (s[i] == '(') {
      ++depth;
    } else if (s[i] == ')' && depth > 0) {
      --depth;
    }
  }
  return out;
}

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

int gres_gpu_count(std::string_view gres) {
  int total = 0;
  for (std::string_view entry : split_entries(gres)) {
    if (const auto paren = entry.find('('); paren != std::string_view::npos) entry = entry.substr(0, paren);
    // name[:type][:no_consume]:count; the count is the last field when it is a number.
    const auto first = entry.find(':');
    if (entry.substr(0, first) != "gpu") continue;
    if (first == std::string_view::npos) {
      total += 1;  // "gpu" alone: a count of one
      continue;
    }
    const std::string_view last = entry.substr(entry.rfind(':') + 1);
    if (const auto n = parse_int(last)) total += *n;
    else if (entry.find(':', first + 1) == std::string_view::npos) total += 1;  // "gpu:h200": typed, count 1
  }
  return total;
}

int gpu_request_count(std::string_view request) {
  const auto colon = request.rfind(':');
  const auto n = parse_int(colon == std::string_view::npos ? request : request.substr(colon + 1));
  return n ? *n : -1;
}

}  // namespace gpuaccept
