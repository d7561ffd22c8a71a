#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "html/charts.h"
#include "html/svg.h"

namespace gpuaccept::report {

namespace {

constexpr double kLeft = 64, kRight = 150, kTop = 40, kBottom = 110, kHeight = 360;
constexpr std::size_t kLabelChars = 18;  // longer names are cut; the tooltip has them whole

std::string short_label(const std::string& s) {
  if (s.size() <= kLabelChars) return s;
  std::size_t cut = kLabelChars - 1;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return s.substr(0, cut) + "…";
}

}  // namespace

std::string render_svg(const BarChart& chart) {
  const double n = static_cast<double>(std::max<std::size_t>(chart.bars.size(), 1));
  // Wide enough to read a label per bar on a small fleet; a large one is squeezed and
  // labels are thinned out below.
  const double width = std::clamp(kLeft + kRight + n * 26, 560.0, 1320.0);
  const double plot_right = width - kRight;
  const double bottom = kHeight - kBottom;
  double y_hi = 0;
  for (const auto& b : chart.bars) y_hi = std::max(y_hi, b.value);
  for (const auto& r : chart.references) y_hi = std::max(y_hi, r.value);
  const auto y_ticks = linear_ticks(y_hi * 1.05);
  const Axis y(0, y_ticks.back(), bottom, kTop, false);
  const double pitch = (plot_right - kLeft) / n;
  const std::size_t label_every = static_cast<std::size_t>(std::ceil(14.0 / pitch));

  Svg svg(width, kHeight, chart.title);
  svg.text(kLeft, 22, chart.title, "chart-title", Anchor::Start, 0, chart.details);
  for (const double t : y_ticks) {
    svg.line(kLeft, y(t), plot_right, y(t), "grid");
    svg.text(kLeft - 6, y(t) + 4, tick_label(t, AxisFormat::Number), "tick", Anchor::End);
  }
  for (std::size_t i = 0; i < chart.bars.size(); ++i) {
    const Bar& b = chart.bars[i];
    const double x = kLeft + static_cast<double>(i) * pitch;
    const double top = y(std::max(b.value, 0.0));
    svg.rect(x + pitch * 0.15, top, pitch * 0.7, bottom - top, fmt::format("bar {}", css_class(b.level)), b.tooltip);
    if (i % label_every == 0)
      svg.text(x + pitch / 2, bottom + 12, short_label(b.label), "tick", Anchor::End, -45);
  }
  svg.line(kLeft, bottom, plot_right, bottom, "axis");
  svg.line(kLeft, kTop, kLeft, bottom, "axis");
  svg.text(16, (kTop + bottom) / 2, chart.y_label, "axis-label", Anchor::Middle, -90);
  for (const auto& r : chart.references) {
    svg.line(kLeft, y(r.value), plot_right, y(r.value), "reference");
    svg.text(plot_right + 6, y(r.value) + 4, r.label, "reference-label");
  }
  return svg.str();
}

}  // namespace gpuaccept::report
