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
