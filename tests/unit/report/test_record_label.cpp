#include <catch2/catch.hpp>

#include "thresholds/record_label.h"

using namespace gpuaccept;

TEST_CASE("byte counts read as binary units", "[labels]") {
  CHECK(format_bytes(536870912) == "512 MiB");
  CHECK(format_bytes(8589934592.0) == "8 GiB");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(8) == "8 B");
}

TEST_CASE("values keep one decimal until they are large", "[labels]") {
  CHECK(format_value(612) == "612.0");
  CHECK(format_value(385600) == "385600");
  CHECK(format_value(NAN) == "-");
  CHECK(format_bound(711) == "711");
  CHECK(format_bound(319.5) == "319.5");
}

TEST_CASE("records are named by place and measurement", "[labels]") {
  Record r;
  r.node = "gpa-node2";
  r.gpu_index = 3;
  r.test = "all_reduce";
  r.params = {{"bytes", "33554432"}, {"dtype", "float"}, {"ranks", "8"}};
  CHECK(place_label(r) == "gpa-node2 GPU 3");
  CHECK(measurement_label(r) == "all_reduce 32 MiB float ranks=8");
  r.gpu_index = -1;
  CHECK(place_label(r) == "gpa-node2");
  r.node.clear();
  CHECK(place_label(r) == "job");
  Record g;
  g.test = "gemm";
  g.params = {{"dtype", "bf16"}, {"m", "8192"}, {"n", "8192"}, {"k", "8192"}};
  CHECK(measurement_label(g) == "gemm bf16 8192^3");
  g.params["k"] = "1024";
  CHECK(measurement_label(g) == "gemm bf16 8192x8192x1024");
}

TEST_CASE("chart titles say what was measured, not how", "[labels]") {
  Record g;
  g.test = "gemm";
  g.params = {{"algo", "0"},   {"algos_tried", "3"}, {"dtype", "bf16"}, {"input_sets", "3"},
              {"samples", "10"}, {"m", "4096"},       {"n", "4096"},     {"k", "4096"}};
  CHECK(title_label(g) == "bf16 GEMM 4096\u00b3");
  CHECK(measurement_label(g) == "gemm algo=0 algos_tried=3 bf16 input_sets=3 samples=10 4096^3");
  g.params["k"] = "1024";
  CHECK(title_label(g) == "bf16 GEMM 4096x4096x1024");
  Record m;
  m.test = "memory_bandwidth";
  m.params = {{"kind", "d2d_copy"}, {"bytes", "1073741824"}, {"grid", "528"}, {"block", "256"}};
  CHECK(title_label(m) == "memory bandwidth d2d copy 1 GiB");
  Record h;
  h.test = "host_device_bandwidth";
  h.params = {{"direction", "h2d"}};
  CHECK(title_label(h) == "host device bandwidth h2d");
}
