// The report's two kinds of plot, as plain data, and their rendering to inline SVG:
//  - LineChart: y against x, one line per series (NCCL busbw against message size,
//    training throughput against GPU count);
//  - BarChart: one bar per GPU, coloured by its worst level, with reference lines
//    (a rule's bound, the fleet median).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "html/chart_axis.h"
#include "model/level.h"

namespace gpuaccept::report {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), sorted by x
};

struct LineChart {
  std::string title;
  std::string note;  // under the title, e.g. "lowest of 2 records per point"
  std::string x_label, y_label;
  bool log2_x = false;
  AxisFormat x_format = AxisFormat::Number;
  std::vector<ChartSeries> series;
};

struct Bar {
  std::string label;
  double value = 0;
  Level level = Level::Pass;
  std::string tooltip;
};

struct ReferenceLine {
  double value = 0;
  std::string label;  // "min 711 (gemm_bf16_8192)"
};

struct BarChart {
  std::string title;    // what a reviewer reads: "bf16 GEMM 4096³ per GPU"
  std::string details;  // the measurement in full (algo=, samples=, ...): the title's tooltip
  std::string y_label;
  std::vector<Bar> bars;
  std::vector<ReferenceLine> references;
};

std::string render_svg(const LineChart& chart);
std::string render_svg(const BarChart& chart);

}  // namespace gpuaccept::report
