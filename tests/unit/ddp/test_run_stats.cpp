// The arithmetic behind the ddp learning check (medians, the replica hash and the MFU peak
// are src/train's: tests/unit/train/test_step_stats.cpp).
#include <catch2/catch.hpp>

#include <cmath>

#include "ddp/run_stats.h"

using namespace gpuaccept::ddp;

TEST_CASE("the learning bound lies between the floor and a uniform guess") {
  const double t = learning_threshold(50257, 1.0765, 0.5);
  CHECK(t == Approx((std::log(50257.0) + 1.0765) / 2));
  CHECK(learning_threshold(512, 1.0, 1.0) == Approx(1.0));
  CHECK(learning_threshold(512, 1.0, 0.0) == Approx(std::log(512.0)));
}
