#include "html/svg.h"

#include <fmt/format.h>

#include "html/html_escape.h"

namespace gpuaccept::report {

namespace {

const char* anchor_name(Anchor a) {
  switch (a) {
    case Anchor::Start: return "start";
    case Anchor::Middle: return "middle";
    case Anchor::End: return "end";
  }
  return "start";
}

std::string tooltip_element(std::string_view tooltip) {
  return tooltip.empty() ? std::string() : fmt::format("<title>{}</title>", html_escape(tooltip));
}

}  // namespace

Svg::Svg(double width, double height, std::string_view label) : width_(width), height_(height), label_(label) {}

Svg& Svg::line(double x1, double y1, double x2, double y2, std::string_view css_class) {
  body_ += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" class="{}"/>)", x1, y1, x2, y2,
                       html_escape(css_class));
  return *this;
}

Svg& Svg::polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke,
                   std::string_view css_class) {
  std::string pts;
  for (const auto& [x, y] : points) pts += fmt::format("{:.1f},{:.1f} ", x, y);
  body_ += fmt::format(R"(<polyline points="{}" stroke="{}" class="{}"/>)", pts, html_escape(stroke),
                       html_escape(css_class));
  return *this;
}

Svg& Svg::circle(double cx, double cy, double r, std::string_view fill, std::string_view tooltip) {
  body_ += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="{:.1f}" fill="{}">{}</circle>)", cx, cy, r,
                       html_escape(fill), tooltip_element(tooltip));
  return *this;
}

Svg& Svg::rect(double x, double y, double w, double h, std::string_view css_class, std::string_view tooltip) {
  body_ += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" class="{}">{}</rect>)", x, y, w,
                       h, html_escape(css_class), tooltip_element(tooltip));
  return *this;
}

Svg& Svg::swatch(double x, double y, double size, std::string_view fill) {
  body_ += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" rx="2" fill="{}"/>)", x, y, size,
                       size, html_escape(fill));
  return *this;
}

Svg& Svg::text(double x, double y, std::string_view content, std::string_view css_class, Anchor anchor,
               double rotate, std::string_view tooltip) {
  const std::string transform =
      rotate == 0 ? std::string() : fmt::format(R"x( transform="rotate({:.0f} {:.1f} {:.1f})")x", rotate, x, y);
  body_ += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" class="{}" text-anchor="{}"{}>{}{}</text>)", x, y,
                       html_escape(css_class), anchor_name(anchor), transform, tooltip_element(tooltip),
                       html_escape(content));
  return *this;
}

std::string Svg::str() const {
  return fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}" role="img" aria-label="{}">{}</svg>)",
      width_, height_, width_, height_, html_escape(label_), body_);
}

}  // namespace gpuaccept::report
