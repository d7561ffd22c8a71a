#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "html/charts.h"
#include "html/svg.h"
#include "thresholds/record_label.h"

namespace gpuaccept::report {

namespace {

// Tableau 10: distinct at a glance and kind to the common colour-vision deficiencies.
const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

constexpr double kWidth = 600, kHeight = 330;
constexpr double kLeft = 64, kTop = 52, kBottom = 52, kLegendWidth = 160;

}  // namespace

std::string render_svg(const LineChart& chart) {
  double x_lo = INFINITY, x_hi = -INFINITY, y_hi = 0;
  for (const auto& s : chart.series)
    for (const auto& [x, y] : s.points) {
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_hi = std::max(y_hi, y);
    }
  if (x_lo > x_hi) x_lo = x_hi = 1;  // no points: an empty frame
  if (chart.log2_x && x_lo == x_hi) x_lo /= 2, x_hi *= 2;

  const double right = kWidth - kLegendWidth;
  const double bottom = kHeight - kBottom;
  const auto y_ticks = linear_ticks(y_hi * 1.05);
  const Axis x(x_lo, x_hi, kLeft + 8, right - 8, chart.log2_x);
  const Axis y(0, y_ticks.back(), bottom, kTop, false);

  Svg svg(kWidth, kHeight, chart.title);
  svg.text(kLeft, 20, chart.title, "chart-title");
  if (!chart.note.empty()) svg.text(kLeft, 36, chart.note, "chart-note");
  for (const double t : y_ticks) {
    svg.line(kLeft, y(t), right, y(t), "grid");
    svg.text(kLeft - 6, y(t) + 4, tick_label(t, AxisFormat::Number), "tick", Anchor::End);
  }
  const auto x_ticks = chart.log2_x ? log2_ticks(x_lo, x_hi) : linear_ticks(x_hi, 6);
  for (const double t : x_ticks) {
    if (t < x.lo() || t > x.hi()) continue;
    svg.line(x(t), bottom, x(t), bottom + 4, "axis");
    svg.text(x(t), bottom + 17, tick_label(t, chart.x_format), "tick", Anchor::Middle);
  }
  svg.line(kLeft, bottom, right, bottom, "axis");
  svg.line(kLeft, kTop, kLeft, bottom, "axis");
  svg.text((kLeft + right) / 2, kHeight - 12, chart.x_label, "axis-label", Anchor::Middle);
  svg.text(16, (kTop + bottom) / 2, chart.y_label, "axis-label", Anchor::Middle, -90);

  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const auto& s = chart.series[i];
    const char* colour = kPalette[i % std::size(kPalette)];
    std::vector<std::pair<double, double>> px;
    for (const auto& [vx, vy] : s.points) px.emplace_back(x(vx), y(vy));
    svg.polyline(px, colour, "series");
    for (std::size_t j = 0; j < px.size(); ++j) {
      const auto& [vx, vy] = s.points[j];
      svg.circle(px[j].first, px[j].second, 3, colour,
                 fmt::format("{}: {} → {}", s.name, chart.x_format == AxisFormat::Bytes ? format_bytes(vx) : format_value(vx),
                             format_value(vy)));
    }
    const double ly = kTop + 4 + static_cast<double>(i) * 18;
    svg.swatch(right + 14, ly - 9, 10, colour);
    svg.text(right + 30, ly, s.name, "legend");
  }
  return svg.str();
}

}  // namespace gpuaccept::report
