// The slowest GPU alone beside the scaling efficiency (train/slowest_alone.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "train/slowest_alone.h"

using namespace gpuaccept::train;

TEST_CASE("the slowest GPU alone is the lowest finite rate, with its rank") {
  // Four H200s alone in the full pipeline, 2026-11-26 (tokens/s, rank order).
  const SlowestAlone s = slowest_alone({{520818}, {520859}, {513646}, {525529}});
  CHECK(s.rank == 2);
  CHECK(s.rate == 513646);
  // A rank whose run gave no rate (NaN) is not the slowest; none at all gives rank -1.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(slowest_alone({{nan}, {500}, {490}}).rank == 2);
  CHECK(slowest_alone({{nan}, {nan}}).rank == -1);
  CHECK(slowest_alone({}).rank == -1);
}

TEST_CASE("the note names the slowest rank and the efficiency against it") {
  const SlowestAlone s{513646, 2};
  CHECK(slowest_alone_note(s, 4, 484012, "gpa-node1") ==
        ", the slowest GPU alone: rank 2 on gpa-node1 at 513646, of which this is 94.2%");
  // One GPU, or no rate: nothing to compare, no note.
  CHECK(slowest_alone_note(s, 1, 484012, "gpa-node1").empty());
  CHECK(slowest_alone_note(SlowestAlone{}, 4, 484012, "gpa-node1").empty());
}
