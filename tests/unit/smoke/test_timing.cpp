#include <catch2/catch.hpp>

#include <cmath>

#include "cuda/timing.h"

using gpuaccept::median;

TEST_CASE("median of samples", "[smoke][timing]") {
  CHECK(median({3.0}) == 3.0);
  CHECK(median({5.0, 1.0, 3.0}) == 3.0);
  CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK(median({1.0, 1.0, 100.0}) == 1.0);  // one disturbed sample does not move it
  CHECK(std::isnan(median({})));
}
