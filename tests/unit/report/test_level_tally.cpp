#include <catch2/catch.hpp>

#include "model/level.h"

using namespace gpuaccept::report;

TEST_CASE("a tally's summary is its worst level, SKIP only when nothing else", "[level]") {
  LevelTally t;
  CHECK(t.summary() == Level::Skip);
  t.add(Level::Skip, 3);
  CHECK(t.summary() == Level::Skip);
  t.add(Level::Pass);
  CHECK(t.summary() == Level::Pass);  // a phase that passed and skipped fp8 has passed
  t.add(Level::Warn);
  CHECK(t.summary() == Level::Warn);
  t.add(Level::Error);
  t.add(Level::Fail);
  CHECK(t.summary() == Level::Error);
  CHECK(t.total() == 7);
  CHECK(fails_run(t.summary()));
  CHECK_FALSE(fails_run(Level::Warn));
}

TEST_CASE("rule outcomes map onto levels", "[level]") {
  CHECK(level_of(gpuaccept::RuleOutcome::NoData) == Level::Skip);
  CHECK(level_of(gpuaccept::RuleOutcome::Warn) == Level::Warn);
  CHECK(level_of(gpuaccept::Status::Error) == Level::Error);
}
