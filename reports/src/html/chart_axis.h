// Axes of the report's plots: a linear or log2 mapping from data to pixels, and tick
// positions at round numbers (linear) or powers of two (log2, for message sizes).
#pragma once

#include <string>
#include <vector>

namespace gpuaccept::report {

enum class AxisFormat { Number, Bytes };

class Axis {
 public:
  // Maps [lo, hi] onto pixels [p0, p1]; with `log2`, lo and hi must be positive.
  Axis(double lo, double hi, double p0, double p1, bool log2);
  double operator()(double v) const;
  double lo() const { return lo_; }
  double hi() const { return hi_; }

 private:
  double lo_, hi_, p0_, p1_;
  bool log2_;
};

// 0 and round numbers (1, 2 or 5 x 10^k apart) up to at least `hi`; the last tick is the new top.
std::vector<double> linear_ticks(double hi, int target = 5);
// Powers of two from lo to hi, every second or fourth one when there would be more than `max_ticks`.
std::vector<double> log2_ticks(double lo, double hi, int max_ticks = 10);

std::string tick_label(double v, AxisFormat f);

}  // namespace gpuaccept::report
