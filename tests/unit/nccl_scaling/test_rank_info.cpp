// Ranks that share a GPU: refused as NCCL refuses them, or run (distinct NCCL_HOSTID) and
// marked as not this GPU's figures; RankInfo's trip through JSON (src/cuda/rank_info.h);
// the hosts NCCL sees (nccl-scaling's plan).
#include <catch2/catch.hpp>

#include "cuda/rank_info.h"
#include "nccl-scaling/plan.h"

using namespace gpuaccept;
using namespace gpuaccept::nccl_scaling;

namespace {

RankInfo rank_on(const std::string& host, const std::string& uuid, const std::string& host_id = "") {
  RankInfo r;
  r.host = host;
  r.uuid = uuid;
  r.pci_bus_id = "00000000:18:00.0";
  r.nccl_host_id = host_id;
  r.device = 0;
  return r;
}

}  // namespace

TEST_CASE("one GPU per rank: nothing to say") {
  const auto s = find_gpu_sharing({rank_on("n1", "GPU-a"), rank_on("n1", "GPU-b"), rank_on("n2", "GPU-a")});
  CHECK(s.refused.empty());
  CHECK(s.joined.empty());
}

TEST_CASE("two ranks of one host on one GPU are refused, naming both") {
  const auto s = find_gpu_sharing({rank_on("n1", "GPU-a"), rank_on("n1", "GPU-b"), rank_on("n1", "GPU-a")});
  CHECK(s.refused == "ranks 0 and 2 on n1 share GPU GPU-a (00000000:18:00.0): bind one GPU per rank (srun --gpus-per-task=1)");
}

TEST_CASE("ranks with their own NCCL_HOSTID on one GPU run, marked as a test set-up") {
  const auto s = find_gpu_sharing({rank_on("n1", "GPU-a", "h0"), rank_on("n1", "GPU-a", "h1"), rank_on("n1", "GPU-a", "h2")});
  CHECK(s.refused.empty());
  CHECK(s.joined.starts_with("ranks 0,1,2 on n1 share GPU GPU-a; each rank has its own NCCL_HOSTID"));
}

TEST_CASE("one pair with the same NCCL_HOSTID among shared ranks is still refused") {
  const auto s = find_gpu_sharing({rank_on("n1", "GPU-a", "h0"), rank_on("n1", "GPU-a", "h1"), rank_on("n1", "GPU-a", "h1")});
  CHECK(s.refused.starts_with("ranks 1 and 2 on n1 share GPU GPU-a"));
}

TEST_CASE("ranks without a GPU are not taken for sharing one") {
  RankInfo none;
  none.host = "n1";
  const auto s = find_gpu_sharing({none, none});
  CHECK(s.refused.empty());
  CHECK(s.joined.empty());
}

TEST_CASE("RankInfo survives the JSON exchange") {
  RankInfo r = rank_on("n1", "GPU-a", "h7");
  r.name = "NVIDIA H200";
  r.mem_total = 150'000'000'000;
  r.links.nvlink_peers = {1, 2};
  const RankInfo back = nlohmann::json(r).get<RankInfo>();
  CHECK(back.host == "n1");
  CHECK(back.nccl_host_id == "h7");
  CHECK(back.uuid == "GPU-a");
  CHECK(back.name == "NVIDIA H200");
  CHECK(back.mem_total == r.mem_total);
  CHECK(back.links.nvlink_peers == std::vector<int>{1, 2});
}

TEST_CASE("NCCL's hosts: the nodes, unless NCCL_HOSTID splits them") {
  const Topology plain = nccl_hosts({rank_on("n1", "GPU-a"), rank_on("n1", "GPU-b"), rank_on("n2", "GPU-a")});
  CHECK(plain.rank_node == std::vector<int>{0, 0, 1});
  CHECK(plain.node_names == std::vector<std::string>{"n1", "n2"});
  const Topology split = nccl_hosts({rank_on("n1", "GPU-a", "h0"), rank_on("n1", "GPU-a", "h1")});
  CHECK(split.rank_node == std::vector<int>{0, 1});
  // So the transport between them is NCCL's network, not the node's PCIe or NVLink.
  NcclNetEnv env;
  env.ib_disable = "1";
  CHECK(classify_transport({0, 1}, split, {RankLinks{}, RankLinks{}}, env) == "NET/Socket");
}
