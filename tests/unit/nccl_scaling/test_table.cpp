// The job-log table: nccl-tests' time format and column layout.
#include <catch2/catch.hpp>

#include "nccl-scaling/table.h"

using namespace gpuaccept::nccl_scaling;

TEST_CASE("time column follows nccl-tests' precision steps") {
  CHECK(format_time_us(23.456) == "  23.46");
  CHECK(format_time_us(123.456) == "  123.5");
  CHECK(format_time_us(12345.6) == "  12346");
}

TEST_CASE("rows line up under the header; placements not run show dashes") {
  TableRow row;
  row.size_bytes = 33554432;
  row.count = 8388608;
  row.type = "float";
  row.redop = "sum";
  row.root = -1;
  row.out_of_place = {true, 180.5, 185.9, 325.3, 0};
  row.in_place = {true, 179.9, 186.5, 326.4, -1};
  const std::string line = format_table_row(row);
  CHECK(line.find("33554432") != std::string::npos);
  CHECK(line.find("325.30") != std::string::npos);
  CHECK(line.find("N/A") != std::string::npos);
  const std::string header = format_table_header();
  const auto last_header_line = header.substr(header.rfind('\n') + 1);
  CHECK(line.size() == last_header_line.size());

  TableRow half = row;
  half.in_place = {};
  const std::string t = format_table("alltoall", {half});
  CHECK(t.find("#        (B)") != std::string::npos);
  CHECK(t.find("      -") != std::string::npos);
  CHECK(t.find("# Avg bus bandwidth    : 325.3") != std::string::npos);
}
