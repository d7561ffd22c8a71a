// The table rank 0 (and each node's leader at intra_node) prints into the job log, laid
// out like nccl-tests' so the two can be read side by side or diffed:
//   #       size         count      type   redop    root     time   algbw   busbw #wrong ...
// Pure text formatting; the figures come from the records' measurements.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gpuaccept::nccl_scaling {

struct PlacementFigures {
  bool run = false;      // false: not defined (in place alltoall/sendrecv): shown as "-"
  double time_us = 0;
  double algbw = 0;      // GB/s
  double busbw = 0;
  long long wrong = -1;  // -1: not checked ("N/A")
};

struct TableRow {
  std::size_t size_bytes = 0;  // nccl-tests' size column
  std::size_t count = 0;       // elements passed to NCCL
  std::string type;            // nccl-tests' type name
  std::string redop;
  int root = -1;
  PlacementFigures out_of_place, in_place;
};

// nccl-tests' time column: %7.0f from 10 ms, %7.1f from 100 us, else %7.2f.
std::string format_time_us(double us);
std::string format_table_header();
std::string format_table_row(const TableRow& row);
// Header, rows, and nccl-tests' closing "# Avg bus bandwidth" over every figure shown.
std::string format_table(const std::string& title, const std::vector<TableRow>& rows);

}  // namespace gpuaccept::nccl_scaling
