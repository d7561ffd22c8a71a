// nccl-scaling's view of the fabric: the transports NCCL's own log names (nccl_log.h, on log
// fixtures of NET/IB with and without GPUDirect, sockets, P2P/SHM), the verdict on them
// (transport_judge.h), the line rate a group can drive (line_rate.h) and the scale's time
// budget (scale_budget.h).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "nccl-scaling/line_rate.h"
#include "nccl-scaling/nccl_log.h"
#include "nccl-scaling/scale_budget.h"
#include "nccl-scaling/transport_judge.h"
#include "../fresh_dir.h"

using namespace gpuaccept;
using namespace gpuaccept::nccl_scaling;

namespace {

// NCCL 2.2x's lines, as it writes them with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET.
const char* kIbGdr =
    "node1:4242:4242 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>\n"
    "node1:4242:4250 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n"
    "node1:4242:4250 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via NET/IB/0(1)/GDRDMA/Shared\n"
    "node1:4242:4250 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n";
const char* kIbNoGdr = "node1:4242:4250 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0\n";
const char* kSocket =
    "node1:4242:4242 [0] NCCL INFO NET/Socket : Using [0]eth0:10.213.7.11<0>\n"
    "node1:4242:4250 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n"
    "node1:4242:4250 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n"
    "node1:4242:4242 [0] misc/ibvwrap.cc:66 NCCL WARN Call to ibv_open_device failed\n";

RankInfo rank(const std::string& host, bool ib, bool gdr, std::vector<NearPort> near = {}, double eth = 0) {
  RankInfo r;
  r.host = host;
  r.links.ib = ib;
  r.links.gdr_possible = gdr;
  r.links.nearest_ports = std::move(near);
  r.links.ethernet_gbps = eth;
  return r;
}

Topology two_nodes(int gpus) {
  Topology t;
  t.node_names = {"node1", "node2"};
  for (int n = 0; n < 2; ++n)
    for (int g = 0; g < gpus; ++g) t.rank_node.push_back(n);
  return t;
}

}  // namespace

TEST_CASE("NCCL's log: the transports of its via lines, its warnings and its network devices", "[fabric]") {
  const ObservedTransports ib = parse_nccl_log(kIbGdr);
  CHECK(ib.kinds == std::set<std::string>{"NET/IB/GDRDMA", "P2P"});
  CHECK(ib.between_nodes());
  CHECK_FALSE(ib.over_sockets());
  CHECK_FALSE(ib.ib_without_gdr());
  CHECK_THAT(ib.net_devices, Catch::Contains("mlx5_0:1/IB"));
  CHECK(parse_nccl_log(kIbNoGdr).ib_without_gdr());
  const ObservedTransports sock = parse_nccl_log(kSocket);
  CHECK(sock.kinds == std::set<std::string>{"NET/Socket", "SHM"});
  CHECK(sock.over_sockets());
  REQUIRE(sock.warnings.size() == 1);
  CHECK_THAT(sock.warnings[0], Catch::Contains("ibv_open_device"));
  CHECK(transport_kind("x via NET/AWS Libfabric/0/GDRDMA") == "NET/AWS Libfabric/GDRDMA");  // a plugin
  CHECK(transport_kind("Channel 00/0 : 0[0] -> 1[1]") == "");
  CHECK_FALSE(parse_nccl_log("node1:1:1 [0] NCCL INFO Init COMPLETE\n").between_nodes());
}

TEST_CASE("NCCL's log file: set up only where the job left NCCL_DEBUG alone, read whole lines at a time", "[fabric]") {
  const auto dir = gpuaccept::testing::fresh_dir("nccl-log");
  const std::string path = (dir / "nccl.log").string();
  unsetenv("NCCL_DEBUG");
  unsetenv("NCCL_DEBUG_FILE");
  {
    NcclLog log(path);
    REQUIRE(log.observing());
    CHECK(std::string(std::getenv("NCCL_DEBUG")) == "INFO");
    CHECK(std::string(std::getenv("NCCL_DEBUG_FILE")) == path);
    std::ofstream(path) << kSocket << "node1:4242:4250 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] via NET/IB/0/GDR";
    CHECK(log.read_new().kinds == std::set<std::string>{"NET/Socket", "SHM"});  // the unfinished line waits
    std::ofstream(path, std::ios::app) << "DMA\n";
    CHECK(log.read_new().kinds == std::set<std::string>{"NET/IB/GDRDMA"});
  }
  CHECK_FALSE(std::filesystem::exists(path));  // removed with its reader
  {
    NcclLog taken(path);  // NCCL_DEBUG is set now, as an operator would have it
    CHECK_FALSE(taken.observing());
    CHECK_THAT(taken.why_not(), Catch::Contains("NCCL_DEBUG"));
    CHECK(taken.read_new().kinds.empty());
  }
  unsetenv("NCCL_DEBUG");
  unsetenv("NCCL_DEBUG_FILE");
  unsetenv("NCCL_DEBUG_SUBSYS");
  std::filesystem::remove_all(dir);
}

TEST_CASE("transport verdict: sockets beside active RDMA ports, sockets without a declared tcp fabric, IB without GDR",
          "[fabric]") {
  const std::vector<RankInfo> rdma = {rank("node1", true, true), rank("node2", true, true)};
  const std::vector<RankInfo> bare = {rank("node1", false, false), rank("node2", false, false)};
  LineRate lr{800, "ports", "infiniband", "node1", "mlx5_0/1+mlx5_1/1"};
  TransportEvidence e{"inter_node", {0, 1}, {{"NET/IB/GDRDMA"}, {"NET/IB/GDRDMA"}}, ""};
  CHECK(judge_nccl_transport(e, rdma, {}, lr).status == Status::Pass);

  e.kinds = {{"NET/Socket"}, {"NET/Socket"}};
  const Record fell_back = judge_nccl_transport(e, rdma, {}, lr);
  CHECK(fell_back.status == Status::Fail);
  CHECK_THAT(fell_back.message, Catch::Contains("NET/Socket on node1,node2 although they have active RDMA ports") &&
                                    Catch::Contains("800 Gb/s"));
  CHECK(fell_back.params.at("hosts_socket") == "node1,node2");

  LineRate reference{800, "reference", "none", "node1", "2 x 400 Gb/s (fabric.reference_port_gbps)"};
  const Record no_rdma = judge_nccl_transport(e, bare, {}, reference);
  CHECK(no_rdma.status == Status::Fail);
  CHECK_THAT(no_rdma.message, Catch::Contains("no RDMA port") && Catch::Contains("fabric.transport is not tcp") &&
                                  Catch::Contains("100.0 GB/s"));
  FabricConfig tcp;
  tcp.tcp = true;
  CHECK(judge_nccl_transport(e, bare, tcp, {100, "ethernet", "tcp", "node1", "eth0"}).status == Status::Pass);

  e.kinds = {{"NET/IB"}, {"NET/IB/GDRDMA"}};
  const Record no_gdr = judge_nccl_transport(e, rdma, {}, lr);
  CHECK(no_gdr.status == Status::Fail);
  CHECK_THAT(no_gdr.message, Catch::Contains("without GPUDirect RDMA on node1"));
  FabricConfig optional;
  optional.require_gpudirect = false;
  CHECK(judge_nccl_transport(e, rdma, optional, lr).status == Status::Pass);

  e.kinds = {{"P2P"}, {"P2P"}};
  CHECK(judge_nccl_transport(e, rdma, {}, lr).status == Status::Skip);  // nothing crossed nodes
  e.not_observed = "NCCL_DEBUG is set by the job";
  CHECK(judge_nccl_transport(e, rdma, {}, lr).status == Status::Skip);
}

TEST_CASE("line rate: distinct nearest ports per node, the lowest node; Ethernet or the reference without ports",
          "[fabric]") {
  const Topology t = two_nodes(2);
  const NearPort p0{"mlx5_0/1", 400, "InfiniBand"}, p1{"mlx5_1/1", 400, "InfiniBand"}, half{"mlx5_1/1", 200, "InfiniBand"};
  std::vector<RankInfo> infos = {rank("node1", true, true, {p0}), rank("node1", true, true, {p1}),
                                 rank("node2", true, true, {p0}), rank("node2", true, true, {half})};
  const LineRate all = line_rate_of({0, 1, 2, 3}, t, infos, false, 400);
  CHECK(all.gbps == 600);  // node2: 400 + 200
  CHECK(all.node == "node2");
  CHECK(all.fabric == "infiniband");
  CHECK(all.source == "ports");
  CHECK(line_rate_of({0, 2}, t, infos, false, 400).gbps == 400);  // one GPU a node: its one port
  // Two GPUs nearest to the same two ports share them: each port counted once.
  infos[0].links.nearest_ports = infos[1].links.nearest_ports = {p0, p1};
  CHECK(line_rate_of({0, 1, 2, 3}, t, infos, false, 400).gbps == 600);
  infos[1].links.nearest_ports = {p0};
  infos[0].links.nearest_ports = {p0};
  CHECK(line_rate_of({0, 1}, Topology{{0, 0}, {"node1"}}, infos, false, 400).gbps == 400);

  const std::vector<RankInfo> bare = {rank("node1", false, false, {}, 10), rank("node1", false, false, {}, 10),
                                      rank("node2", false, false, {}, 10), rank("node2", false, false, {}, 10)};
  const LineRate ref = line_rate_of({0, 1, 2, 3}, t, bare, false, 400);
  CHECK(ref.gbps == 800);
  CHECK(ref.source == "reference");
  CHECK(ref.fabric == "none");
  const LineRate eth = line_rate_of({0, 1, 2, 3}, t, bare, true, 400);
  CHECK(eth.gbps == 10);
  CHECK(eth.fabric == "tcp");
}

TEST_CASE("loopback line rate: the port each rank leaves through, shared where ranks share one", "[fabric]") {
  const NearPort p0{"mlx5_0/1", 400, "InfiniBand"}, p1{"mlx5_1/1", 400, "InfiniBand"}, half{"mlx5_1/1", 200, "InfiniBand"};
  std::vector<RankInfo> infos = {rank("node1", true, true, {p0}), rank("node1", true, true, {p1})};
  const LineRate own = loopback_line_rate({0, 1}, infos);
  CHECK(own.gbps == 400);  // not 800: every rank's share of the ring leaves through its one port
  CHECK(own.fabric == "infiniband");
  infos[1].links.nearest_ports = {half};
  CHECK(loopback_line_rate({0, 1}, infos).gbps == 200);  // the port at half rate limits the node
  infos[1].links.nearest_ports = {p0};  // both GPUs behind one NIC
  const LineRate shared = loopback_line_rate({0, 1}, infos);
  CHECK(shared.gbps == 200);
  CHECK_THAT(shared.ports, Catch::Contains("shared by 2 GPUs"));
  infos[1].links.nearest_ports.clear();
  CHECK(loopback_line_rate({0, 1}, infos).gbps == 0);  // a GPU with no port: nothing to judge against
}

TEST_CASE("scale budget: a slow link cuts the sweep, keeps one judged size, and says the rate", "[fabric]") {
  const IterPlan normal{5, 20, 3};
  ScaleBudget none(0, 1);
  none.begin_sweep();
  CHECK(none.before(std::size_t{8} << 30, normal, 2).kind == ScaleBudget::Decision::Kind::Measure);

  ScaleBudget b(60, 2);  // two sweeps: 30 s each
  b.begin_sweep();
  CHECK(b.before(8, normal, 2).kind == ScaleBudget::Decision::Kind::Measure);  // no basis yet
  b.after(8, normal, 2, 2250);  // 2.25 ms for 8 B: a TCP link
  std::size_t bytes = 16;
  for (; bytes <= (std::size_t{1} << 20); bytes *= 2) {  // latency-bound sizes still fit
    const auto d = b.before(bytes, normal, 2);
    REQUIRE(d.kind == ScaleBudget::Decision::Kind::Measure);
    b.after(bytes, normal, 2, 2250);
  }
  // 1.5 GB/s from here: 64 MiB takes 45 ms an operation, 128 MiB 90 ms.
  b.after(std::size_t{64} << 20, normal, 2, 45000);
  REQUIRE(b.before(std::size_t{128} << 20, normal, 2).kind == ScaleBudget::Decision::Kind::Measure);
  b.after(std::size_t{128} << 20, normal, 2, 90000);  // 23 s of the sweep's 30 spent
  const auto judged = b.before(std::size_t{256} << 20, normal, 2);  // 24 s more would not fit
  CHECK(judged.kind == ScaleBudget::Decision::Kind::MeasureReduced);
  CHECK(judged.plan.iters * judged.plan.batches == 1);
  CHECK_THAT(judged.reason, Catch::Contains("1.49 GB/s") && Catch::Contains("nccl.scale_budget_s"));
  b.after(std::size_t{256} << 20, judged.plan, 2, 180000);
  const auto cut = b.before(std::size_t{512} << 20, normal, 2);
  CHECK(cut.kind == ScaleBudget::Decision::Kind::Skip);
  CHECK_THAT(cut.reason, Catch::Contains("256 MiB and larger"));  // where the sweep was cut
  CHECK(b.spent_s() < 60);

  // Where the judged size lies beyond the cut, the sizes between are left out.
  ScaleBudget early(60, 2, std::size_t{1} << 30);
  early.begin_sweep();
  early.after(std::size_t{128} << 20, normal, 2, 90000);
  CHECK(early.before(std::size_t{256} << 20, normal, 2).kind == ScaleBudget::Decision::Kind::Skip);

  // The next sweep starts afresh with what is left.
  b.begin_sweep();
  CHECK(b.before(8, normal, 2).kind == ScaleBudget::Decision::Kind::Measure);
}
