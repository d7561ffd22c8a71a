// A minimal SVG builder for the report's inline plots: shapes, text and tooltips
// (<title>), every text and attribute value passed through html_escape. Colours are
// CSS classes of the page or fill/stroke values chosen by the chart code.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuaccept::report {

enum class Anchor { Start, Middle, End };

class Svg {
 public:
  Svg(double width, double height, std::string_view label);  // label: what the plot shows, for screen readers

  Svg& line(double x1, double y1, double x2, double y2, std::string_view css_class);
  Svg& polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke, std::string_view css_class);
  Svg& circle(double cx, double cy, double r, std::string_view fill, std::string_view tooltip);
  Svg& rect(double x, double y, double w, double h, std::string_view css_class, std::string_view tooltip);
  Svg& swatch(double x, double y, double size, std::string_view fill);  // a legend's colour square
  // `rotate`: degrees about (x, y), e.g. -90 for a vertical axis label; `tooltip`: shown on hover.
  Svg& text(double x, double y, std::string_view content, std::string_view css_class, Anchor anchor = Anchor::Start,
            double rotate = 0, std::string_view tooltip = {});

  std::string str() const;

 private:
  double width_, height_;
  std::string label_;
  std::string body_;
};

}  // namespace gpuaccept::report
