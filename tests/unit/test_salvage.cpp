// A phase file assembled from the ranks' checkpoints after a step died without writing it.
#include <catch2/catch.hpp>

#include <filesystem>

#include <signal.h>
#include <unistd.h>

#include "results/isolated_read.h"
#include "results/result_file.h"
#include "results/salvage.h"

using namespace gpuaccept;
namespace fs = std::filesystem;

namespace {

// What ResultWriter::checkpoint leaves for one rank of a 3-rank smoke step.
void write_part(const fs::path& parts, int rank) {
  ResultFile f;
  f.attributes = {{"phase", "smoke"}, {"world_size", "3"}, {"rank", std::to_string(rank)}, {"complete", "partial"}};
  Record r;
  r.phase = "smoke";
  r.rank = rank;
  r.node = "gpa-node1";
  r.test = "slurm_controller";
  r.status = Status::Pass;
  f.records.push_back(r);
  f.documents["facts"] = {"{\"rank\": " + std::to_string(rank) + "}"};
  fs::create_directories(parts);
  write_result_file(parts / ("rank-0000" + std::to_string(rank) + ".h5"), f);
}

// Crashes as libhdf5 does on some damaged files (SIGSEGV in H5HG_read), on rank 1's part only.
ResultFile crash_on_rank_1(const fs::path& p) {
  if (p.filename() == "rank-00001.h5") ::raise(SIGSEGV);
  return read_result_file(p);
}

}  // namespace

TEST_CASE("salvage writes the phase file from the checkpoints and names the ranks that left none") {
  const fs::path run = fs::temp_directory_path() / ("gpuaccept-unit-salvage-" + std::to_string(::getpid()));
  fs::remove_all(run);
  write_part(run / "smoke.parts", 0);
  write_part(run / "smoke.parts", 2);

  const auto written = salvage_phase_file(run, "smoke", "srun exited with code 137", 0);
  REQUIRE(written.has_value());
  const ResultFile f = read_result_file(run / "smoke.h5");
  CHECK(f.attributes.at("complete") == "partial");
  CHECK(f.attributes.at("world_size") == "3");
  CHECK(f.attributes.count("rank") == 0);
  REQUIRE(f.records.size() == 3);
  const Record& err = f.records.back();
  CHECK(err.test == "result_gather");
  CHECK(err.status == Status::Error);
  CHECK_THAT(err.message, Catch::Contains("srun exited with code 137") && Catch::Contains("2 of 3 ranks") &&
                              Catch::Contains("ranks 1 left no checkpoint"));
  REQUIRE(f.documents.at("facts").size() == 3);
  CHECK(f.documents.at("facts")[2] == "{\"rank\": 2}");
  CHECK(f.documents.at("facts")[1].empty());

  // The step's own file is never replaced.
  CHECK_FALSE(salvage_phase_file(run, "smoke", "again", 0).has_value());
  fs::remove_all(run);
}

TEST_CASE("salvage with no checkpoint at all still records the failure") {
  const fs::path run = fs::temp_directory_path() / ("gpuaccept-unit-salvage-empty-" + std::to_string(::getpid()));
  fs::remove_all(run);  // not even the run directory: the step died before any rank made it
  REQUIRE(salvage_phase_file(run, "ddp", "srun exited with code 9", 4).has_value());
  const ResultFile f = read_result_file(run / "ddp.h5");
  REQUIRE(f.records.size() == 1);
  CHECK_THAT(f.records[0].message, Catch::Contains("0 of 4 ranks") && Catch::Contains("ranks 0,1,2,3 left no checkpoint"));
  fs::remove_all(run);
}

TEST_CASE("salvage survives a checkpoint that crashes its reader, and names it", "[isolated]") {
  const fs::path run = fs::temp_directory_path() / ("gpuaccept-unit-salvage-crash-" + std::to_string(::getpid()));
  fs::remove_all(run);
  for (int rank : {0, 1, 2}) write_part(run / "smoke.parts", rank);
  const auto read = [](const fs::path& p) {
    return read_result_file_isolated(p, std::chrono::seconds(30), &crash_on_rank_1);
  };
  REQUIRE(salvage_phase_file(run, "smoke", "srun exited with code 139", 0, read).has_value());
  const ResultFile f = read_result_file(run / "smoke.h5");
  REQUIRE(f.records.size() == 3);  // ranks 0 and 2, and the ERROR
  const std::string& msg = f.records.back().message;
  CHECK_THAT(msg, Catch::Contains("2 of 3 ranks") && Catch::Contains("ranks 1 left no checkpoint") &&
                      Catch::Contains("1 checkpoint(s) could not be read") && Catch::Contains("rank-00001.h5") &&
                      Catch::Contains("SIGSEGV"));
  fs::remove_all(run);
}

TEST_CASE("salvage refuses a checkpoint whose rank attribute is not a rank", "[salvage]") {
  const fs::path run = fs::temp_directory_path() / ("gpuaccept-unit-salvage-rank-" + std::to_string(::getpid()));
  fs::remove_all(run);
  write_part(run / "smoke.parts", 0);
  ResultFile bad;
  bad.attributes = {{"phase", "smoke"}, {"world_size", "2"}, {"rank", "1073741825"}, {"complete", "partial"}};
  write_result_file(run / "smoke.parts" / "rank-00001.h5", bad);
  REQUIRE(salvage_phase_file(run, "smoke", "srun exited with code 9", 0).has_value());
  const ResultFile f = read_result_file(run / "smoke.h5");
  CHECK(f.documents.at("facts").size() == 3);  // world_size 3 from rank 0, not a slot per damaged rank number
  CHECK_THAT(f.records.back().message, Catch::Contains("attribute 'rank' is '1073741825'"));
  fs::remove_all(run);
}
