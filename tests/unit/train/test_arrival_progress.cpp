// The training phases' arrival progress: what tells, after a timeout, which rank did not arrive.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "cuda/arrival_board.h"
#include "train/arrival_progress.h"

using namespace gpuaccept;
using namespace gpuaccept::train;

TEST_CASE("arrival progress rises within a run and across runs in the phase's order") {
  CHECK(arrival_progress("all", 2) > arrival_progress("all", 1));
  CHECK(arrival_progress("resume", 1) > arrival_progress("all", 999));
  CHECK(arrival_progress("equivalence", 1) > arrival_progress("resume", 999));
  CHECK(arrival_progress("single_gpu", 1) > arrival_progress("equivalence", 999));
  CHECK(arrival_progress("node", 1) > arrival_progress("single_gpu", 999));
  CHECK_THROWS_AS(arrival_progress("warmup", 1), std::logic_error);
}

TEST_CASE("arrival progress reads back as the step and run") {
  CHECK(describe_arrival_progress(arrival_progress("all", 5)) == "step 5 of run 'all'");
  CHECK(describe_arrival_progress(arrival_progress("node", 12)) == "step 12 of run 'node'");
  CHECK(describe_arrival_progress(0) == "set-up, before the first step");
}

TEST_CASE("a rank that hung before step 5 of the all-GPU run is the one named") {
  const long long target = arrival_progress("all", 5);
  std::vector<ArrivalEntry> board{{0, true, target, 100.0, 10, "node1"},
                                  {1, true, arrival_progress("all", 4), 100.0, 11, "node1"},
                                  {2, true, target, 100.0, 12, "node1"},
                                  {3, true, arrival_progress("all", 4), 60.0, 13, "node1"}};
  const auto laggards = find_laggards(board, {0, 1, 2, 3}, target, 101.0, 11.0);
  REQUIRE(laggards.size() == 2);
  CHECK(describe_laggards(laggards, describe_arrival_progress) ==
        "1 (node1, alive, stuck at step 4 of run 'all'), 3 (node1, no heartbeat for 41 s: dead?, last at step 4 of "
        "run 'all')");
}
