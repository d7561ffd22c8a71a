#include <catch2/catch.hpp>

#include <slurm/slurm.h>

#include "smoke/slurm_checks.h"

using namespace gpuaccept;
using namespace gpuaccept::smoke;

TEST_CASE("node states: DOWN, DRAIN and FAIL are problems", "[smoke][slurm]") {
  CHECK(node_state_problem(NODE_STATE_IDLE).empty());
  CHECK(node_state_problem(NODE_STATE_MIXED).empty());
  CHECK(node_state_problem(NODE_STATE_ALLOCATED | NODE_STATE_COMPLETING).empty());
  CHECK(node_state_problem(NODE_STATE_DOWN) == "node is DOWN");
  CHECK(node_state_problem(NODE_STATE_MIXED | NODE_STATE_DRAIN) == "node is DRAINING");
  CHECK(node_state_problem(NODE_STATE_IDLE | NODE_STATE_DRAIN) == "node is DRAINED");
  CHECK(node_state_problem(NODE_STATE_ALLOCATED | NODE_STATE_FAIL) == "node is FAILING");
  CHECK(node_state_name(NODE_STATE_MIXED | NODE_STATE_DRAIN) == "MIXED+DRAIN");
  const Record r = evaluate_node_state({"gpa-node2", NODE_STATE_IDLE | NODE_STATE_DRAIN, "bad gpu", "gpu:8"});
  CHECK(r.status == Status::Fail);
  CHECK(r.node == "gpa-node2");
  CHECK(blames_node(r));  // about gpa-node2, though rank 0 asked the controller
  CHECK_THAT(r.message, Catch::Contains("DRAINED") && Catch::Contains("bad gpu"));
}

TEST_CASE("partition must be UP", "[smoke][slurm]") {
  CHECK(evaluate_partition("gpu", SlurmPartition{"gpu", PARTITION_UP}).status == Status::Pass);
  CHECK(evaluate_partition("gpu", SlurmPartition{"gpu", PARTITION_DRAIN}).status == Status::Fail);
  CHECK(evaluate_partition("gpu", std::nullopt).status == Status::Fail);
  CHECK_FALSE(blames_node(evaluate_partition("gpu", std::nullopt)));  // about the job: no node to drain
}

TEST_CASE("configured GPU GRES equals the GPUs NVML sees", "[smoke][slurm]") {
  CHECK(evaluate_gres("n1", "gpu:h200:8(S:0-1)", 8, "").status == Status::Pass);
  const Record missing = evaluate_gres("n1", "gpu:h200:8(S:0-1)", 7, "");
  CHECK(missing.status == Status::Fail);
  CHECK(missing.params.at("expected") == "8");
  CHECK(missing.node == "n1");
  CHECK(blames_node(missing));
  const Record cpu = evaluate_gres("n1", "gpu:2", 0, "NVML not loadable: libnvidia-ml.so.1");
  CHECK(cpu.status == Status::Fail);
  CHECK_THAT(cpu.message, Catch::Contains("NVML not loadable"));
  CHECK(evaluate_gres("n1", "", 0, "NVML not loadable").status == Status::Skip);
  CHECK(evaluate_gres("n1", "(null)", 4, "").status == Status::Fail);
}

TEST_CASE("outside a Slurm job the controller checks SKIP", "[smoke][slurm]") {
  const auto rs = controller_checks(SlurmEnv{}, {});
  REQUIRE(rs.size() == 4);
  for (const auto& r : rs) {
    CHECK(r.status == Status::Skip);
    CHECK(r.message == "not in a Slurm job");
  }
}
