#include <catch2/catch.hpp>

#include <map>

#include "smoke/resources.h"

using namespace gpuaccept;
using namespace gpuaccept::smoke;

namespace {
EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}
}  // namespace

TEST_CASE("CPUs per task: fewer than asked fails", "[smoke][resources]") {
  SlurmEnv env;
  env.job_id = "7";
  env.cpus_per_task = "4";
  CHECK(check_cpus_per_task(env, 4, "0-3").status == Status::Pass);
  CHECK(check_cpus_per_task(env, 2, "0-1").status == Status::Fail);
  const Record more = check_cpus_per_task(env, 8, "0-7");
  CHECK(more.status == Status::Pass);
  CHECK_THAT(more.message, Catch::Contains("not bound"));
  env.cpus_per_task.clear();
  CHECK(check_cpus_per_task(env, 8, "0-7").status == Status::Skip);
  CHECK(check_cpus_per_task(SlurmEnv{}, 8, "0-7").status == Status::Skip);
}

TEST_CASE("requested memory from the Slurm variables", "[smoke][resources]") {
  CHECK(requested_memory(env_of({{"SLURM_MEM_PER_NODE", "4000"}}))->bytes == 4000ull << 20);
  CHECK(requested_memory(env_of({{"SLURM_MEM_PER_CPU", "1000"}, {"SLURM_CPUS_ON_NODE", "4"}}))->bytes == 4000ull << 20);
  CHECK(requested_memory(env_of({{"SLURM_MEM_PER_GPU", "1000"}, {"SLURM_GPUS_ON_NODE", "2"}}))->bytes == 2000ull << 20);
  CHECK_FALSE(requested_memory(env_of({})));
}

TEST_CASE("cgroup paths from /proc/self/cgroup", "[smoke][resources]") {
  CHECK(cgroup_v2_path("0::/system.slice/slurmstepd.scope/job_5/step_0/user/task_0\n") ==
        "/system.slice/slurmstepd.scope/job_5/step_0/user/task_0");
  CHECK(cgroup_v1_memory_path("12:cpuset:/slurm/uid_0/job_5\n4:memory:/slurm/uid_0/job_5/step_0\n") ==
        "/slurm/uid_0/job_5/step_0");
  CHECK(cgroup_v1_memory_path("0::/x\n").empty());
}

TEST_CASE("memory: a cgroup limit below the request fails", "[smoke][resources]") {
  const MemoryRequest want{4000ull << 20, "SLURM_MEM_PER_NODE=4000"};
  MemoryAvailable avail;
  avail.physical_bytes = 64ull << 30;
  CHECK(check_memory(want, avail, true).status == Status::Pass);
  avail.cgroup_bytes = 4000ull << 20;
  avail.cgroup_file = "/sys/fs/cgroup/job/memory.max";
  CHECK(check_memory(want, avail, true).status == Status::Pass);
  avail.cgroup_bytes = 2000ull << 20;
  const Record r = check_memory(want, avail, true);
  CHECK(r.status == Status::Fail);
  CHECK_THAT(r.message, Catch::Contains("memory.max"));
  CHECK(check_memory(std::nullopt, avail, true).status == Status::Skip);
  CHECK(check_memory(want, avail, false).status == Status::Skip);
}
