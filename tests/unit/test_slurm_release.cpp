// Slurm's client/controller compatibility window (slurm/slurm_release.h) and discover's
// slurm_client and library_versions checks (discover/version_checks.h).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "discover/version_checks.h"
#include "slurm/slurm_release.h"

using namespace gpuaccept;
using nlohmann::json;

TEST_CASE("Slurm releases parse and count in SchedMD's sequence", "[slurm]") {
  CHECK(parse_slurm_release("24.11.5")->text() == "24.11");
  CHECK(parse_slurm_release("slurm 22.05.8")->text() == "22.05");
  CHECK_FALSE(parse_slurm_release("banana"));
  CHECK_FALSE(parse_slurm_release("24.13.1"));
  CHECK(releases_between({22, 5}, {24, 11}) == 4);  // 23.02, 23.11, 24.05, 24.11
  CHECK(releases_between({24, 11}, {25, 11}) == 2);
  CHECK(releases_between({25, 11}, {26, 5}) == 1);
  CHECK(releases_between({24, 11}, {22, 5}) == -4);
  CHECK_FALSE(releases_between({24, 6}, {24, 11}));
}

TEST_CASE("a libslurm too old or too new for the controller is refused with what to rebuild against", "[slurm]") {
  using Kind = ClientVerdict::Kind;
  CHECK(judge_slurm_client({24, 11}, {24, 11}).kind == Kind::Compatible);
  CHECK(judge_slurm_client({23, 2}, {24, 5}).kind == Kind::Compatible);    // two back, before 24.11
  CHECK(judge_slurm_client({22, 5}, {24, 5}).kind == Kind::ClientTooOld);  // three back, before 24.11
  CHECK(judge_slurm_client({23, 11}, {25, 5}).kind == Kind::Compatible);   // three back, from 24.11
  const ClientVerdict old = judge_slurm_client({22, 5}, {24, 11});         // Debian 12's libslurm, Debian 13's slurmctld
  CHECK(old.kind == Kind::ClientTooOld);
  CHECK_THAT(old.message, Catch::Contains("4 releases older") && Catch::Contains("Slurm 24.11") &&
                              Catch::Contains("SLURM_ROOT"));
  const ClientVerdict fresh = judge_slurm_client({24, 11}, {22, 5});
  CHECK(fresh.kind == Kind::ClientTooNew);
  CHECK_THAT(fresh.message, Catch::Contains("newer than slurmctld 22.05"));
}

TEST_CASE("discover's slurm_client record: PASS, FAIL on a refusal or a release out of the window, SKIP outside Slurm",
          "[discover][slurm]") {
  discover::ControllerAnswer same;
  same.version = "24.11.5";
  CHECK(discover::check_slurm_client("24.11.5", same).status == Status::Pass);
  discover::ControllerAnswer newer;
  newer.version = "25.11.1";
  const Record r = discover::check_slurm_client("22.05.8", newer);
  CHECK(r.status == Status::Fail);
  CHECK(r.params.at("controller") == "25.11.1");
  discover::ControllerAnswer refused;
  refused.refused = "Incompatible versions of client and server code";
  CHECK(discover::check_slurm_client("22.05.8", refused).status == Status::Fail);
  CHECK_THAT(discover::check_slurm_client("22.05.8", refused).message, Catch::Contains("Incompatible versions"));
  discover::ControllerAnswer none;
  none.why_unknown = "not in a Slurm job";
  CHECK(discover::check_slurm_client("22.05.8", none).status == Status::Skip);
}

namespace {
json with_libraries(const std::string& host, const std::string& nccl_loaded, const std::string& driver = "13.0",
                    const std::string& pmix_loaded = "OpenPMIx 5.0.7") {
  return {{"host", host},
          {"libraries",
           {{{"name", "nccl"}, {"compiled", "2.28.3"}, {"loaded", nccl_loaded}, {"path", "/usr/lib/libnccl.so.2"}},
            {{"name", "cuda_runtime"}, {"compiled", "13.0"}, {"loaded", "13.0"}, {"path", ""}},
            {{"name", "cuda_driver"}, {"compiled", ""}, {"loaded", driver}, {"path", ""}},
            {{"name", "pmix"}, {"compiled", "5.0.7"}, {"loaded", pmix_loaded}, {"path", ""}}}}};
}
}  // namespace

TEST_CASE("library_versions: an older NCCL or PMIx than built against, or a driver too old, FAILs the node",
          "[discover]") {
  const auto ok = discover::check_library_versions({with_libraries("n1", "2.28.3"), with_libraries("n1", "2.28.3")});
  REQUIRE(ok.size() == 1);  // one verdict per node
  CHECK(ok[0].status == Status::Pass);
  CHECK(ok[0].node == "n1");
  const auto nccl = discover::check_library_versions({with_libraries("n1", "2.28.3"), with_libraries("n2", "2.22.3")});
  CHECK(nccl[1].status == Status::Fail);
  CHECK_THAT(nccl[1].message, Catch::Contains("NCCL 2.22.3 loaded (/usr/lib/libnccl.so.2)") && Catch::Contains("2.28.3"));
  CHECK(discover::check_library_versions({with_libraries("n1", "2.29.1")})[0].status == Status::Pass);  // newer is fine
  const auto driver = discover::check_library_versions({with_libraries("n1", "2.28.3", "12.4")});
  CHECK(driver[0].status == Status::Fail);
  CHECK_THAT(driver[0].message, Catch::Contains("the driver runs CUDA up to 12.4"));
  CHECK(discover::check_library_versions({with_libraries("n1", "2.28.3", "13.0", "OpenPMIx 4.2.2")})[0].status ==
        Status::Fail);
  CHECK(discover::check_library_versions({json{{"host", "old"}}})[0].status == Status::Skip);
}
