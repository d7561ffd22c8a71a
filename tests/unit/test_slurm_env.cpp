#include <catch2/catch.hpp>

#include <map>

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
  CHECK(run_id_from_env(fake_env({{"SLURM_JOB_ID", "101"}, {"SLURM_ARRAY_JOB_ID", "100"}})) == "100");
  CHECK(run_id_from_env(fake_env({{"SLURM_JOB_ID", "101"}})) == "101");
  CHECK(run_id_from_env(fake_env({{"SLURM_JOB_ID", "101"}, {"GPUACCEPT_RUN_ID", "mine"}})) == "mine");
  CHECK(run_id_from_env(fake_env({})).empty());
  CHECK(make_local_run_id().rfind("local-", 0) == 0);
}

TEST_CASE("an unusable results directory is refused with its path", "[run_dir]") {
  CHECK_THROWS_WITH(prepare_run_dir("/proc/gpuaccept-cannot-exist/run"), Catch::Contains("/proc/gpuaccept-cannot-exist/run"));
  CHECK_THROWS_WITH(prepare_run_dir("/etc/hostname/run"), Catch::Contains("/etc/hostname/run"));
}
