// Which ranks measure together at each scale, the SKIP decisions, the pairwise plans and
// the transport classification, for the job shapes a cluster sees.
#include <catch2/catch.hpp>

#include <set>

#include "nccl-scaling/plan.h"
#include "results/record.h"

using namespace gpuaccept;
using namespace gpuaccept::nccl_scaling;

namespace {

Topology shape(std::vector<int> gpus_per_node) {
  Topology t;
  for (std::size_t n = 0; n < gpus_per_node.size(); ++n) {
    t.node_names.push_back("node" + std::to_string(n + 1));
    for (int g = 0; g < gpus_per_node[n]; ++g) t.rank_node.push_back(static_cast<int>(n));
  }
  return t;
}

const std::vector<Scale> kAll = {Scale::IntraNode, Scale::InterNode, Scale::All, Scale::GpuPair, Scale::NodePair};

}  // namespace

TEST_CASE("two nodes of four GPUs") {
  const Topology t = shape({4, 4});
  const ScalePlan intra = plan_scale(Scale::IntraNode, t, kAll);
  REQUIRE(intra.runs());
  REQUIRE(intra.groups.size() == 2);
  CHECK(intra.groups[0].members == std::vector<int>{0, 1, 2, 3});
  CHECK(intra.groups[1].members == std::vector<int>{4, 5, 6, 7});
  CHECK(intra.groups[1].node == "node2");
  CHECK(intra.groups[0].color != intra.groups[1].color);
  const ScalePlan inter = plan_scale(Scale::InterNode, t, kAll);
  REQUIRE(inter.runs());
  CHECK(inter.groups.at(0).members == std::vector<int>{0, 4});
  CHECK(inter.groups.at(0).node.empty());
  const ScalePlan all = plan_scale(Scale::All, t, kAll);
  REQUIRE(all.runs());
  CHECK(all.groups.at(0).members.size() == 8);
  CHECK(group_of(intra.groups, 6) == &intra.groups[1]);
  CHECK(group_of(inter.groups, 5) == nullptr);  // idle at inter_node
}

TEST_CASE("a collective within one node is that node's; one across nodes is the job's") {
  // sweep.cpp records each group's rows with rank -1 and node = group.node: a FAIL (wrong
  // results, a bound) within one node drains that node, whichever rank wrote it; one across
  // nodes names none (results/record.h, blames_node).
  const Topology t = shape({4, 4});
  const auto row = [](const Group& g) {
    Record r;
    r.rank = kJobLevel;
    r.node = g.node;
    r.status = Status::Fail;
    return r;
  };
  const ScalePlan intra = plan_scale(Scale::IntraNode, t, kAll);
  CHECK(blames_node(row(intra.groups.at(0))));
  CHECK(row(intra.groups.at(1)).node == "node2");
  CHECK_FALSE(blames_node(row(plan_scale(Scale::InterNode, t, kAll).groups.at(0))));
  CHECK_FALSE(blames_node(row(plan_scale(Scale::All, t, kAll).groups.at(0))));
  const PairPlan pairs = plan_gpu_pairs(t, {});
  for (const auto& g : pairs.rounds.at(0)) CHECK(blames_node(row(g)));
}

TEST_CASE("one node: inter_node skipped, all is intra_node") {
  const Topology t = shape({8});
  CHECK(plan_scale(Scale::IntraNode, t, kAll).runs());
  CHECK(plan_scale(Scale::InterNode, t, kAll).skip_reason == "one node only");
  CHECK(plan_scale(Scale::All, t, kAll).skip_reason.find("identical to intra_node") == 0);
  // ... unless intra_node was not asked for: then `all` measures it.
  CHECK(plan_scale(Scale::All, t, {Scale::All}).runs());
  CHECK(plan_scale(Scale::All, t, {Scale::All}).groups.at(0).node == "node1");
}

TEST_CASE("one GPU per node: intra_node skipped, all is inter_node") {
  const Topology t = shape({1, 1, 1});
  CHECK(plan_scale(Scale::IntraNode, t, kAll).skip_reason == "one GPU per node");
  CHECK(plan_scale(Scale::InterNode, t, kAll).runs());
  CHECK(plan_scale(Scale::All, t, kAll).skip_reason.find("identical to inter_node") == 0);
}

TEST_CASE("one GPU in the job: everything skipped") {
  const Topology t = shape({1});
  for (Scale s : {Scale::IntraNode, Scale::InterNode, Scale::All})
    CHECK(plan_scale(s, t, kAll).skip_reason == "one GPU only");
  CHECK(plan_gpu_pairs(t, {}).skip_reason == "one GPU only");
  CHECK(plan_node_pairs(t, PairMode::AllGpus).skip_reason == "one node only");
}

TEST_CASE("uneven nodes: a single-GPU node sits intra_node out") {
  const Topology t = shape({4, 1, 2});
  const ScalePlan intra = plan_scale(Scale::IntraNode, t, kAll);
  REQUIRE(intra.runs());
  CHECK(intra.groups.size() == 2);
  REQUIRE(intra.skipped_nodes.size() == 1);
  CHECK(intra.skipped_nodes[0].first == "node2");
  CHECK(plan_scale(Scale::InterNode, t, kAll).groups.at(0).members == std::vector<int>{0, 4, 5});
}

TEST_CASE("GPU pairs: every pair of each node once, nodes in parallel") {
  const Topology t = shape({4, 3});
  const PairPlan p = plan_gpu_pairs(t, {10, 11, 12, 13, -1, -1, -1});
  REQUIRE(p.runs());
  CHECK(p.rounds.size() == 3);  // max(4-1, 3)
  int node1 = 0, node2 = 0;
  for (const auto& round : p.rounds) {
    std::set<int> busy, colors;
    for (const auto& g : round) {
      REQUIRE(g.members.size() == 2);
      CHECK(t.rank_node[g.members[0]] == t.rank_node[g.members[1]]);
      for (int m : g.members) CHECK(busy.insert(m).second);
      CHECK(colors.insert(g.color).second);  // one communicator per pair
      (g.node == "node1" ? node1 : node2)++;
    }
  }
  CHECK(node1 == 6);
  CHECK(node2 == 3);
  // Names: the GPU index when known, else the local rank.
  CHECK(p.rounds[0][0].a.size() == 2);  // "10".."13" on node1
}

TEST_CASE("node pairs: one GPU each or all GPUs of both") {
  const Topology t = shape({2, 2, 2});
  const PairPlan one = plan_node_pairs(t, PairMode::OneGpu);
  REQUIRE(one.rounds.size() == 3);
  for (const auto& round : one.rounds) {
    REQUIRE(round.size() == 1);  // three nodes: one pair per round, one node idle
    CHECK(round[0].members.size() == 2);
    CHECK(t.local_rank(round[0].members[0]) == 0);
  }
  const PairPlan all = plan_node_pairs(t, PairMode::AllGpus);
  CHECK(all.rounds[0][0].members.size() == 4);
  CHECK(all.rounds[0][0].a != all.rounds[0][0].b);
}

TEST_CASE("transport from topology and NCCL's environment") {
  const Topology t = shape({2, 2});
  std::vector<RankLinks> switched(4), bare(4);
  for (int r = 0; r < 4; ++r) {
    switched[r].known = bare[r].known = true;
    switched[r].nvml_index = bare[r].nvml_index = r % 2;
    switched[r].nvswitch = true;
    switched[r].ib = bare[r].ib = true;
  }
  const NcclNetEnv none;
  CHECK(classify_transport({0, 1}, t, switched, none) == "NVLink");
  CHECK(classify_transport({0, 1}, t, bare, none) == "PCIe");
  auto direct = bare;
  direct[0].nvlink_peers = {1};  // one side reports the wire: enough
  CHECK(classify_transport({0, 1}, t, direct, none) == "NVLink");
  CHECK(classify_transport({0, 2}, t, switched, none) == "NET/IB");
  CHECK(classify_transport({0, 1, 2, 3}, t, switched, none) == "NVLink+NET/IB");
  CHECK(classify_transport({0, 2}, t, switched, {.nccl_net = "", .ib_disable = "1", .p2p_disable = ""}) == "NET/Socket");
  CHECK(classify_transport({0, 2}, t, switched, {.nccl_net = "Socket", .ib_disable = "", .p2p_disable = ""}) == "NET/Socket");
  CHECK(classify_transport({0, 2}, t, switched, {.nccl_net = "AWS Libfabric", .ib_disable = "", .p2p_disable = ""}) ==
        "NET/AWS Libfabric");
  CHECK(classify_transport({0, 1}, t, switched, {.nccl_net = "", .ib_disable = "", .p2p_disable = "1"}) == "SHM");
  auto no_ib = switched;
  no_ib[2].ib = false;
  CHECK(classify_transport({0, 2}, t, no_ib, none) == "NET/Socket");
  auto unknown = switched;
  unknown[1].known = false;
  CHECK(classify_transport({0, 1}, t, unknown, none).find("unknown") != std::string::npos);
}
