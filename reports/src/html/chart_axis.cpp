#include "html/chart_axis.h"

#include <cmath>

#include <fmt/format.h>

#include "thresholds/record_label.h"

namespace gpuaccept::report {

Axis::Axis(double lo, double hi, double p0, double p1, bool log2) : lo_(lo), hi_(hi), p0_(p0), p1_(p1), log2_(log2) {
  if (hi_ <= lo_) hi_ = lo_ + 1;  // one value: any span draws it, and none divides by zero
}

double Axis::operator()(double v) const {
  const double t = log2_ ? (std::log2(v) - std::log2(lo_)) / (std::log2(hi_) - std::log2(lo_)) : (v - lo_) / (hi_ - lo_);
  return p0_ + t * (p1_ - p0_);
}

std::vector<double> linear_ticks(double hi, int target) {
  if (!(hi > 0)) hi = 1;
  const double raw = hi / target;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  std::vector<double> out;
  for (double v = 0; out.empty() || out.back() < hi; v += step) out.push_back(v);
  return out;
}

std::vector<double> log2_ticks(double lo, double hi, int max_ticks) {
  const int first = static_cast<int>(std::ceil(std::log2(lo)));
  const int last = static_cast<int>(std::floor(std::log2(hi)));
  int every = 1;
  while ((last - first) / every + 1 > max_ticks) every *= 2;
  std::vector<double> out;
  for (int e = first; e <= last; e += every) out.push_back(std::ldexp(1.0, e));
  return out;
}

std::string tick_label(double v, AxisFormat f) {
  if (f == AxisFormat::Bytes) {
    const std::string s = format_bytes(v);
    return s.substr(0, s.find(' ')) + (s.find(' ') == std::string::npos ? "" : s.substr(s.find(' ') + 1, 1));
  }
  if (std::fabs(v) >= 1e6) return fmt::format("{}M", v / 1e6);
  if (std::fabs(v) >= 1e4) return fmt::format("{}k", v / 1e3);
  return fmt::format("{}", v);
}

}  // namespace gpuaccept::report
