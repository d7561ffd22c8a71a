#include <catch2/catch.hpp>

#include "run/baseline_compare.h"

using namespace gpuaccept;
using namespace gpuaccept::report;

namespace {

Record measurement(const std::string& node, const std::string& unit, double value) {
  Record r;
  r.phase = "smoke";
  r.node = node;
  r.gpu_index = 0;
  r.test = "t";
  r.metric = "m";
  r.unit = unit;
  r.value = value;
  return r;
}

}  // namespace

TEST_CASE("a bandwidth more than 5% lower is a regression", "[baseline]") {
  const auto rs = find_regressions({measurement("n1", "GB/s", 100), measurement("n2", "GB/s", 100)},
                                   {measurement("n1", "GB/s", 94), measurement("n2", "GB/s", 96)});
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].now.node == "n1");
  CHECK(rs[0].baseline == 100);
  CHECK(rs[0].worse_pct == Approx(6.0));
}

TEST_CASE("a latency more than 5% higher is a regression, a lower one is not", "[baseline]") {
  const auto rs = find_regressions({measurement("n1", "us", 10), measurement("n2", "us", 10)},
                                   {measurement("n1", "us", 11), measurement("n2", "us", 5)});
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].now.node == "n1");
  CHECK(rs[0].worse_pct == Approx(10.0));
}

TEST_CASE("measurements only in one run, or of units without a direction, are not compared", "[baseline]") {
  CHECK(find_regressions({measurement("n1", "GB/s", 100)}, {measurement("n2", "GB/s", 1)}).empty());
  CHECK(find_regressions({measurement("n1", "C", 40)}, {measurement("n1", "C", 90)}).empty());
}
