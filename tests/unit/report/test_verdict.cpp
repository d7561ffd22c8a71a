#include <catch2/catch.hpp>

#include "model/report.h"

using namespace gpuaccept;
using namespace gpuaccept::report;

namespace {

Record record(const std::string& phase, Status s) {
  Record r;
  r.phase = phase;
  r.test = phase + "_check";
  r.node = "node1";
  r.rank = 0;
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
