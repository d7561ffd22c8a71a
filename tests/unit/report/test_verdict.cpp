#include <catch2/catch.hpp>

#include "model/report.h"

using namespace gpuaccept;
using namespace gpuaccept::report;

namespace {

Record record(const std::string& phase, Status s, int gpu_index = 0) {
  Record r;
  r.phase = phase;
  r.test = phase + "_check";
  r.node = "node1";
  r.rank = 0;
  r.gpu_index = gpu_index;
  r.status = s;
  r.message = "why";
  return r;
}

Report report_of(std::vector<Record> records) {
  LoadedRun run;
  run.dir = "/results/run";
  run.records = std::move(records);
  return build_report(run, InventoryTable{}, ThresholdSet{}, ThresholdChoice{}, nullptr);
}

}  // namespace

TEST_CASE("verdict: PASS only when every phase measured something and nothing failed") {
  const Report r = report_of({record("discover", Status::Pass), record("smoke", Status::Pass),
                              record("smoke", Status::Skip)});
  CHECK(verdict_word(r) == "PASS");
  CHECK(exit_code(r) == 0);
  CHECK(r.skipped_phases.empty());
}

TEST_CASE("verdict: a phase whose every record is SKIP makes the run INCOMPLETE, never PASS") {
  const Report r = report_of({record("discover", Status::Pass), record("nccl-scaling", Status::Skip),
                              record("nccl-scaling", Status::Skip)});
  CHECK(verdict_word(r) == "INCOMPLETE");
  CHECK(exit_code(r) == kExitIncomplete);
  REQUIRE(r.skipped_phases == std::vector<std::string>{"nccl-scaling"});
}

TEST_CASE("verdict: a FAIL outranks a skipped phase") {
  const Report r = report_of({record("discover", Status::Fail), record("ddp", Status::Skip)});
  CHECK(verdict_word(r) == "FAIL");
  CHECK(exit_code(r) == 1);
}

TEST_CASE("verdict: a run in which no GPU was measured is INCOMPLETE, never PASS") {
  // As discover + smoke on a machine without a GPU: the scheduler and filesystem checks pass,
  // every check about a GPU SKIPs, and no phase is SKIP as a whole.
  const Report r = report_of({record("discover", Status::Pass, -1), record("discover", Status::Skip, 0),
                              record("smoke", Status::Pass, -1), record("smoke", Status::Skip, 0),
                              record("smoke", Status::Skip, 1)});
  CHECK(r.skipped_phases.empty());
  CHECK(verdict_word(r) == "INCOMPLETE");
  CHECK(exit_code(r) == kExitIncomplete);
  REQUIRE(r.incomplete_reasons.size() == 1);
  CHECK(r.incomplete_reasons[0] == "no GPU was measured: all 3 checks about a GPU SKIPped");
  // One GPU measured is enough for this rule.
  const Report measured = report_of({record("discover", Status::Pass, -1), record("smoke", Status::Pass, 0)});
  CHECK(verdict_word(measured) == "PASS");
}

TEST_CASE("verdict: a run with no check about any GPU is INCOMPLETE too") {
  const Report r = report_of({record("discover", Status::Pass, -1), record("smoke", Status::Pass, -1)});
  CHECK(verdict_word(r) == "INCOMPLETE");
  REQUIRE(r.incomplete_reasons.size() == 1);
  CHECK(r.incomplete_reasons[0] == "no GPU was measured: no check is about a GPU");
}
