// Short human names for records and numbers, shared by rule messages and the report:
//   place_label:       "gpa-node2 GPU 3", "gpa-node2", "job" (a record about the whole job)
//   measurement_label: "gemm bf16 8192^3", "all_reduce 512 MiB float intra_node ranks=8"
//   title_label:       "bf16 GEMM 8192³", "memory bandwidth d2d copy 1 GiB": what a reviewer reads
//                      above a chart; how it was measured (algo=, samples=, grid=) is left to
//                      measurement_label, in the chart's tooltip and the tables
#pragma once

#include <string>

#include "results/record.h"

namespace gpuaccept {

std::string format_bytes(double bytes);  // 536870912 -> "512 MiB"
std::string format_value(double v);      // 612 -> "612.0", 385600 -> "385600", NaN -> "-"
std::string format_bound(double v);      // shortest form: 711, 319.5, 0.25

std::string place_label(const Record& r);
std::string measurement_label(const Record& r);
std::string title_label(const Record& r);

}  // namespace gpuaccept
