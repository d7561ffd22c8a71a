#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "smoke/binding_checks.h"

using namespace gpuaccept;
using namespace gpuaccept::smoke;

namespace {
RankFacts facts(int rank, const std::string& host, const std::string& cpus, const std::string& uuid) {
  RankFacts f;
  f.rank = rank;
  f.host = host;
  f.cpus = cpus;
  f.gpu_uuid = uuid;
  f.gpu_index = uuid.empty() ? -1 : 0;
  f.cuda_visible = uuid.empty() ? 0 : 1;
  return f;
}
SlurmEnv job() {
  SlurmEnv e;
  e.job_id = "42";
  return e;
}
}  // namespace

TEST_CASE("two ranks on one GPU fail, naming ranks and node", "[smoke][binding]") {
  const std::vector<RankFacts> all{facts(0, "n1", "0", "GPU-a"), facts(1, "n1", "1", "GPU-a"),
                                   facts(2, "n2", "0", "GPU-a"), facts(3, "n2", "1", "GPU-b")};
  const auto rs = check_gpu_sharing(all, false);
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].status == Status::Fail);
  CHECK(rs[0].node == "n1");
  CHECK(rs[0].rank == kJobLevel);  // written by rank 0 about n1: n1 is the one blamed
  CHECK(blames_node(rs[0]));
  CHECK_THAT(rs[0].message, Catch::Contains("ranks 0 and 1 share GPU GPU-a") && Catch::Contains("n1"));
  CHECK(rs[1].status == Status::Pass);  // sharing is judged per node: n2's ranks use two GPUs
  CHECK(check_gpu_sharing(all, true)[0].status == Status::Pass);
  CHECK(check_gpu_sharing({facts(0, "n1", "0", "")}, false)[0].status == Status::Skip);
}

TEST_CASE("overlapping CPU masks on a node fail, or SKIP when not required", "[smoke][binding]") {
  const std::vector<RankFacts> all{facts(0, "n1", "0-3", "GPU-a"), facts(1, "n1", "2-5", "GPU-b"),
                                   facts(2, "n1", "6-7", "GPU-c"), facts(3, "n2", "0-3", "GPU-d")};
  auto rs = check_cpu_overlap(all, true);
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].status == Status::Fail);
  CHECK_THAT(rs[0].message, Catch::Contains("ranks 0 and 1 share CPUs 2-3"));
  CHECK_THAT(rs[0].message, !Catch::Contains("rank 2"));
  CHECK(rs[1].status == Status::Pass);  // one rank on n2
  rs = check_cpu_overlap(all, false);
  CHECK(rs[0].status == Status::Skip);
  CHECK_THAT(rs[0].message, Catch::Contains("smoke.require_exclusive_cpus=false"));
  CHECK(check_cpu_overlap({facts(0, "n1", "0-1", ""), facts(1, "n1", "2-3", "")}, true)[0].status == Status::Pass);
}

TEST_CASE("visible GPUs against what Slurm gave the task", "[smoke][binding]") {
  RankFacts one = facts(0, "n1", "0", "GPU-a");
  SlurmEnv env = job();
  env.gpus_per_task = "1";
  CHECK(check_gpu_count(one, env, "").status == Status::Pass);
  env.gpus_per_task = "h200:2";
  CHECK(check_gpu_count(one, env, "").status == Status::Fail);
  env.gpus_per_task.clear();
  env.step_gpus = "0,1";
  CHECK(check_gpu_count(one, env, "").status == Status::Fail);
  CHECK(check_gpu_count(one, env, "closest").status == Status::Pass);  // --gpu-bind splits the step's GPUs
  RankFacts none = facts(0, "n1", "0", "");
  none.gpu_reason = "no CUDA device: no CUDA-capable device is detected";
  const Record r = check_gpu_count(none, env, "");
  CHECK(r.status == Status::Fail);
  CHECK_THAT(r.message, Catch::Contains("no CUDA-capable device"));
  CHECK(check_gpu_count(none, job(), "").status == Status::Skip);  // no GPUs asked for, none seen
  CHECK(check_gpu_count(none, SlurmEnv{}, "").status == Status::Skip);
}

TEST_CASE("NUMA placement: outside the GPU's node is a FAIL only when required", "[smoke][binding]") {
  RankFacts f = facts(0, "n1", "0-7", "GPU-a");
  f.gpu_numa = 0;
  f.gpu_numa_cpus = "0-15";
  CHECK(check_numa_affinity(f, true).status == Status::Pass);
  f.cpus = "0-31";
  CHECK(check_numa_affinity(f, true).status == Status::Fail);
  const Record lenient = check_numa_affinity(f, false);
  CHECK(lenient.status == Status::Pass);
  CHECK_THAT(lenient.message, Catch::Contains("not all on NUMA node 0"));
  f.gpu_numa.reset();
  CHECK(check_numa_affinity(f, true).status == Status::Skip);
}

TEST_CASE("rank facts survive the JSON round trip", "[smoke][binding]") {
  RankFacts f = facts(3, "n2", "4-7", "GPU-x");
  f.gpu_numa = 1;
  f.visible_uuids = {"GPU-x"};
  const RankFacts back = nlohmann::json::parse(nlohmann::json(f).dump()).get<RankFacts>();
  CHECK(back.rank == 3);
  CHECK(back.cpus == "4-7");
  CHECK(back.gpu_numa == 1);
  CHECK(back.visible_uuids == f.visible_uuids);
}
