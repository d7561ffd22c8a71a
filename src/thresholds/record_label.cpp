#include "thresholds/record_label.h"

#include <array>
#include <charconv>
#include <cmath>
#include <optional>

#include <fmt/format.h>

namespace gpuaccept {

namespace {

std::optional<double> as_number(const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// "8192^3" for a square GEMM, "8192x4096x1024" otherwise; "" when m/n/k are absent.
std::string gemm_shape(const Params& p) {
  const auto m = p.find("m"), n = p.find("n"), k = p.find("k");
  if (m == p.end() || n == p.end() || k == p.end()) return {};
  if (m->second == n->second && n->second == k->second) return m->second + "^3";
  return fmt::format("{}x{}x{}", m->second, n->second, k->second);
}

// "d2d_copy" -> "d2d copy"
std::string spaced(std::string s) {
  for (char& c : s)
    if (c == '_') c = ' ';
  return s;
}

}  // namespace

std::string format_bytes(double bytes) {
  static constexpr std::array<const char*, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t u = 0;
  while (u + 1 < kUnits.size() && std::fabs(bytes) >= 1024) {
    bytes /= 1024;
    ++u;
  }
  return bytes == std::floor(bytes) ? fmt::format("{:.0f} {}", bytes, kUnits[u]) : fmt::format("{:.1f} {}", bytes, kUnits[u]);
}

std::string format_value(double v) {
  if (std::isnan(v)) return "-";
  if (std::fabs(v) >= 10000) return fmt::format("{:.0f}", v);
  if (v != 0 && std::fabs(v) < 0.1) return fmt::format("{:.3g}", v);
  return fmt::format("{:.1f}", v);
}

std::string format_bound(double v) { return fmt::format("{}", v); }

std::string place_label(const Record& r) {
  if (r.node.empty()) return r.gpu_index >= 0 ? fmt::format("GPU {}", r.gpu_index) : "job";
  return r.gpu_index >= 0 ? fmt::format("{} GPU {}", r.node, r.gpu_index) : r.node;
}

std::string measurement_label(const Record& r) {
  std::string out = r.test;
  const std::string shape = gemm_shape(r.params);
  for (const auto& [key, value] : r.params) {
    if (!shape.empty() && (key == "m" || key == "n" || key == "k")) continue;
    const auto number = as_number(value);
    // Words speak for themselves ("bf16", "intra_node"); a bare number needs its key.
    if (key == "bytes" && number) out += " " + format_bytes(*number);
    else if (number) out += fmt::format(" {}={}", key, value);
    else out += " " + value;
  }
  if (!shape.empty()) out += " " + shape;
  return out;
}

std::string title_label(const Record& r) {
  // Words (bf16, d2d_copy, h2d) say what was measured and sizes say how big; bare numbers
  // other than a size (algo=0, samples=10, grid=528) say how it was measured and stay out.
  std::string words, size;
  const std::string shape = gemm_shape(r.params);
  if (!shape.empty()) {
    const auto m = r.params.find("m"), n = r.params.find("n"), k = r.params.find("k");
    size = m->second == n->second && n->second == k->second ? m->second + "\u00b3" : shape;
  }
  for (const auto& [key, value] : r.params) {
    if (key == "m" || key == "n" || key == "k") continue;
    const auto number = as_number(value);
    if (key == "bytes" && number) size = format_bytes(*number);
    else if (!number && key != "dir") words += (words.empty() ? "" : " ") + spaced(value);
  }
  std::string out = r.test == "gemm" ? (words.empty() ? "GEMM" : words + " GEMM") : spaced(r.test) + (words.empty() ? "" : " " + words);
  if (!size.empty()) out += " " + size;
  return out;
}

}  // namespace gpuaccept
