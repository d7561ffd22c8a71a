#include <catch2/catch.hpp>

#include <map>

#include "common/error.h"
#include "results/run_dir.h"
#include "slurm/slurm_env.h"

using namespace gpuaccept;

namespace {
EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}
}  // namespace

TEST_CASE("GPU counts from Slurm's variables", "[slurm]") {
  CHECK(count_index_list("") == 0);
  CHECK(count_index_list("0,1,2,3") == 4);
  CHECK(count_index_list("0-3,6") == 5);
  CHECK(slurm_gpus_on_node(SlurmEnv::from(fake_env({{"SLURM_GPUS_ON_NODE", "8"}}))) == 8);
  CHECK(slurm_gpus_on_node(SlurmEnv::from(fake_env({{"SLURM_JOB_GPUS", "0,1"}}))) == 2);
  CHECK(slurm_gpus_on_node(SlurmEnv::from(fake_env({}))) == -1);
}

TEST_CASE("run directory: flag, environment, array, job, local", "[run_dir]") {
  CHECK(results_root("/r", fake_env({{"GPUACCEPT_RESULTS", "/env"}})) == "/r");
  CHECK(results_root("", fake_env({{"GPUACCEPT_RESULTS", "/env"}})) == "/env");
  CHECK(results_root("", fake_env({})) == "results");
  // Every task of a pipeline array shares one directory.
  CHECK(resolve_run_id("", fake_env({{"SLURM_JOB_ID", "101"}, {"SLURM_ARRAY_JOB_ID", "100"}})) == "100");
  CHECK(resolve_run_id("", fake_env({{"SLURM_JOB_ID", "101"}})) == "101");
  CHECK(resolve_run_id("", fake_env({{"SLURM_JOB_ID", "101"}, {"GPUACCEPT_RUN_ID", "mine"}})) == "mine");
  CHECK(resolve_run_id("flag-id", fake_env({{"GPUACCEPT_RUN_ID", "mine"}})) == "flag-id");
  CHECK(resolve_run_id("", fake_env({})).empty());
  CHECK(make_local_run_id().rfind("local-", 0) == 0);
}

TEST_CASE("an unusable results directory is refused with its path", "[run_dir]") {
  CHECK_THROWS_WITH(prepare_run_dir("/proc/gpuaccept-cannot-exist/run"), Catch::Contains("/proc/gpuaccept-cannot-exist/run"));
  CHECK_THROWS_WITH(prepare_run_dir("/etc/hostname/run"), Catch::Contains("/etc/hostname/run"));
}

TEST_CASE("a run id is one safe directory name, wherever it came from", "[run_dir]") {
  using Catch::Contains;
  const auto none = fake_env({});
  CHECK(resolve_run_id("local-20261125T093000Z-4242", none) == "local-20261125T093000Z-4242");
  CHECK(resolve_run_id("gpu-091512.v2_a", none) == "gpu-091512.v2_a");
  CHECK_THROWS_WITH(resolve_run_id("../../escape", none), Contains("--run-id") && Contains("starts with '.'"));
  CHECK_THROWS_WITH(resolve_run_id("a/b", none), Contains("character 0x2f at position 1"));
  CHECK_THROWS_WITH(resolve_run_id("..", none), Contains("starts with '.'"));
  CHECK_THROWS_WITH(resolve_run_id("-rf", none), Contains("starts with '-'"));
  CHECK_THROWS_WITH(resolve_run_id("run id", none), Contains("0x20"));
  CHECK_THROWS_WITH(resolve_run_id("<b>x</b>", none), Contains("0x3c"));
  CHECK_THROWS_WITH(resolve_run_id(std::string(129, 'a'), none), Contains("129 characters"));
  CHECK_THROWS_WITH(resolve_run_id("", fake_env({{"GPUACCEPT_RUN_ID", "x/../../y"}})), Contains("$GPUACCEPT_RUN_ID"));
  CHECK_THROWS_AS(resolve_run_id("", fake_env({{"SLURM_JOB_ID", "12;rm"}})), InputError);
}
