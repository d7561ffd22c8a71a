#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <signal.h>
#include <unistd.h>

#include "common/error.h"
#include "results/isolated_read.h"
#include "results/result_file.h"
#include "run/loaded_run.h"

using namespace gpuaccept;
using namespace gpuaccept::report;
namespace fs = std::filesystem;

namespace {

struct RunDir {
  fs::path path = fs::temp_directory_path() / ("gpuaccept-run-" + std::to_string(::getpid()));
  RunDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~RunDir() { fs::remove_all(path); }
};

ResultFile one_record_file(const std::string& phase) {
  ResultFile f;
  f.attributes = {{"phase", phase}, {"complete", "yes"}};
  Record r;
  r.phase = phase;
  r.rank = 0;
  r.test = "t";
  f.records.push_back(r);
  return f;
}

const Record* error_about(const LoadedRun& run, const std::string& phase) {
  for (const auto& r : run.records)
    if (r.phase == phase && r.test == kResultFileTest && r.status == Status::Error) return &r;
  return nullptr;
}

// What libhdf5 does with some damaged files (issue 18): crash, or loop for ever; here
// for smoke.h5 only.
ResultFile crash_on_smoke(const fs::path& p) {
  if (p.filename() == "smoke.h5") ::raise(SIGSEGV);
  return read_result_file(p);
}
ResultFile loop_on_smoke(const fs::path& p) {
  while (p.filename() == "smoke.h5") ::pause();
  return read_result_file(p);
}

}  // namespace

TEST_CASE("a truncated results file becomes an ERROR record naming it", "[load]") {
  RunDir dir;
  const fs::path good = write_result_file(dir.path / "smoke.h5", one_record_file("smoke"));
  const auto size = fs::file_size(good);
  fs::copy_file(good, dir.path / "nccl-scaling.h5");
  fs::resize_file(dir.path / "nccl-scaling.h5", size / 3);
  const LoadedRun run = load_run(dir.path, {});
  REQUIRE(run.sources.size() == 2);
  const Record* e = error_about(run, "nccl-scaling");
  REQUIRE(e);
  CHECK_THAT(e->message, Catch::Contains("nccl-scaling.h5"));
  CHECK(error_about(run, "smoke") == nullptr);
}

TEST_CASE("a file that is not HDF5 becomes an ERROR record", "[load]") {
  RunDir dir;
  std::ofstream(dir.path / "ddp.h5") << "not hdf5";
  const LoadedRun run = load_run(dir.path, {});
  const Record* e = error_about(run, "ddp");
  REQUIRE(e);
  CHECK_THAT(e->message, Catch::Contains("ddp.h5") && Catch::Contains("not an HDF5 file"));
}

TEST_CASE("an expected phase that left nothing becomes an ERROR record", "[load]") {
  RunDir dir;
  write_result_file(dir.path / "discover.h5", one_record_file("discover"));
  const LoadedRun run = load_run(dir.path, {"discover", "smoke"});
  const Record* e = error_about(run, "smoke");
  REQUIRE(e);
  CHECK_THAT(e->message, Catch::Contains("smoke.h5"));
  CHECK(run.sources.back().state == SourceState::Missing);
}

TEST_CASE("a parts directory without its phase file is read as partial", "[load]") {
  RunDir dir;
  fs::create_directories(dir.path / "smoke.parts");
  write_result_file(dir.path / "smoke.parts" / "rank-00000.h5", one_record_file("smoke"));
  write_result_file(dir.path / "smoke.parts" / "rank-00001.h5", one_record_file("smoke"));
  const LoadedRun run = load_run(dir.path, {"smoke"});
  REQUIRE(run.sources.size() == 2);
  CHECK(run.sources[0].state == SourceState::Partial);
  CHECK(run.records.size() == 3);  // two ranks' records and the ERROR about the missing smoke.h5
  CHECK_THAT(error_about(run, "smoke")->message, Catch::Contains("2 rank(s)"));
}

TEST_CASE("a second run of a phase is its own source of the same phase", "[load]") {
  RunDir dir;
  write_result_file(dir.path / "fsdp-lora.h5", one_record_file("fsdp-lora"));
  const fs::path second = write_result_file(dir.path / "fsdp-lora.h5", one_record_file("fsdp-lora"));
  CHECK(second.filename() == "fsdp-lora-2.h5");
  std::ofstream(dir.path / "fsdp-lora-3.h5") << "garbage";
  const LoadedRun run = load_run(dir.path, {"fsdp-lora"});
  REQUIRE(run.sources.size() == 3);
  for (const auto& s : run.sources) CHECK(s.phase == "fsdp-lora");
}

TEST_CASE("a missing run directory is unusable input", "[load]") {
  CHECK_THROWS_AS(load_run("/nonexistent/gpuaccept-run", {}), InputError);
}

TEST_CASE("a file that crashes its reader is that phase's ERROR; the others are read", "[load]") {
  RunDir dir;
  write_result_file(dir.path / "discover.h5", one_record_file("discover"));
  write_result_file(dir.path / "smoke.h5", one_record_file("smoke"));
  const auto read = [](const fs::path& p) {
    return read_result_file_isolated(p, std::chrono::seconds(30), &crash_on_smoke);
  };
  const LoadedRun run = load_run(dir.path, {"discover", "smoke"}, read);
  const Record* e = error_about(run, "smoke");
  REQUIRE(e);
  CHECK_THAT(e->message, Catch::Contains("damaged results file " + (dir.path / "smoke.h5").string()) &&
                             Catch::Contains("killed by SIGSEGV"));
  CHECK(error_about(run, "discover") == nullptr);
  CHECK(std::count_if(run.records.begin(), run.records.end(), [](const Record& r) { return r.phase == "discover"; }) == 1);
  REQUIRE(run.sources.size() == 2);
  CHECK(run.sources[1].state == SourceState::Unreadable);
}

TEST_CASE("a file whose reader loops is given up at the limit", "[load]") {
  RunDir dir;
  write_result_file(dir.path / "discover.h5", one_record_file("discover"));
  write_result_file(dir.path / "smoke.h5", one_record_file("smoke"));
  const auto read = [](const fs::path& p) {
    return read_result_file_isolated(p, std::chrono::milliseconds(300), &loop_on_smoke);
  };
  const auto start = std::chrono::steady_clock::now();
  const LoadedRun run = load_run(dir.path, {}, read);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  const Record* e = error_about(run, "smoke");
  REQUIRE(e);
  CHECK_THAT(e->message, Catch::Contains("smoke.h5") && Catch::Contains("did not finish within 0.3 s"));
  CHECK(error_about(run, "discover") == nullptr);
}

TEST_CASE("a bad GPUACCEPT_READ_TIMEOUT is unusable input, named", "[load]") {
  RunDir dir;
  ::setenv("GPUACCEPT_READ_TIMEOUT", "soon", 1);
  CHECK_THROWS_WITH(load_run(dir.path, {}), Catch::Contains("GPUACCEPT_READ_TIMEOUT='soon'"));
  ::unsetenv("GPUACCEPT_READ_TIMEOUT");
}

TEST_CASE("load_run: a phase the pipeline did not start (<phase>.not-run) is a SKIP with its reason") {
  RunDir d;
  write_result_file(d.path / "discover.h5", one_record_file("discover"));
  std::ofstream(d.path / "smoke.not-run") << "PIPELINE_TIME=00:20:00 was spent before smoke could start\n";
  // A not-run file beside the phase's own file is a leftover: the file wins.
  write_result_file(d.path / "ddp.h5", one_record_file("ddp"));
  std::ofstream(d.path / "ddp.not-run") << "stale\n";
  const LoadedRun run = load_run(d.path, {"discover", "smoke", "ddp"}, read_result_file);
  const auto skip = std::find_if(run.records.begin(), run.records.end(),
                                 [](const Record& r) { return r.phase == "smoke"; });
  REQUIRE(skip != run.records.end());
  CHECK(skip->status == Status::Skip);
  CHECK(skip->test == "phase");
  CHECK(skip->message == "not run: PIPELINE_TIME=00:20:00 was spent before smoke could start");
  CHECK(error_about(run, "smoke") == nullptr);  // not also "expected phase smoke did not report"
  CHECK(std::none_of(run.records.begin(), run.records.end(),
                     [](const Record& r) { return r.phase == "ddp" && r.status != Status::Pass; }));
}
