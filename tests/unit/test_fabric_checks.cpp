// discover's fabric checks (discover/fabric_checks.h) on inventories whose ports come from
// made-up sysfs trees: each side of every bound (a port Down, a port at half rate, no port on a
// multi-node run, fabric.transport: tcp, the one-per-GPU rule, GPUDirect).
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "discover/fabric_checks.h"
#include "hw/rdma_ports.h"
#include "sysfs_fixture.h"

using namespace gpuaccept;
using gpuaccept::testing::SysfsFixture;
using nlohmann::json;

namespace {

std::vector<std::string> nic(int i) {
  const std::string b = fmt::format("{:02x}", 0x10 + i);
  return {"pci0000:00", "0000:00:01.0", "0000:" + b + ":00.0"};
}

// A node's inventory as collect_rank_inventory writes it: its ports read from `fx`.
json inventory(const std::string& host, const SysfsFixture& fx, int gpus = 2, bool gdr = true) {
  json node_gpus = json::array();
  for (int i = 0; i < gpus; ++i) node_gpus.push_back({{"nvml_index", i}});
  return {{"host", host},
          {"gpus", {{"node_gpus", node_gpus}}},
          {"infiniband", read_rdma_ports(fx.infiniband())},
          {"gpudirect", {{"possible", gdr}, {"detail", gdr ? "nvidia_peermem loaded" : "nvidia_peermem not loaded"}}}};
}

const Record& find(const std::vector<Record>& rs, const std::string& node, const std::string& test) {
  for (const auto& r : rs)
    if (r.node == node && r.test == test) return r;
  FAIL("no " << test << " record for " << node);
  return rs.front();
}

}  // namespace

TEST_CASE("fabric: two healthy nodes pass; a port Down on one FAILs that node by port", "[fabric]") {
  SysfsFixture a("fabric-a"), b("fabric-b");
  for (int i = 0; i < 2; ++i) a.port(fmt::format("mlx5_{}", i), 1, nic(i)), b.port(fmt::format("mlx5_{}", i), 1, nic(i));
  const auto healthy = discover::check_fabric({inventory("n1", a), inventory("n2", b)}, {});
  CHECK(find(healthy, "n1", "fabric_ports").status == Status::Pass);
  CHECK(find(healthy, "n2", "fabric_ports").status == Status::Pass);
  CHECK(find(healthy, "n2", "fabric_rate").status == Status::Pass);
  CHECK(find(healthy, "n2", "gpudirect").status == Status::Pass);

  b.port("mlx5_1", 1, nic(1), "1: DOWN", "2: Polling");
  SysfsFixture c("fabric-c");
  for (int i = 0; i < 2; ++i) c.port(fmt::format("mlx5_{}", i), 1, nic(i));
  const auto down = discover::check_fabric({inventory("n1", a), inventory("n2", b), inventory("n3", c)}, {});
  const Record& r = find(down, "n2", "fabric_ports");
  CHECK(r.status == Status::Fail);
  CHECK(r.value == 1);
  CHECK(r.params.at("expected") == "2");
  CHECK_THAT(r.message, Catch::Contains("mlx5_1/1 1: DOWN / 2: Polling"));
  CHECK(find(down, "n1", "fabric_ports").status == Status::Pass);
}

TEST_CASE("fabric: a port at half rate FAILs by name; fabric.min_rate_gbps is a floor for all", "[fabric]") {
  SysfsFixture a("fabric-rate-a"), b("fabric-rate-b");
  for (int i = 0; i < 2; ++i) a.port(fmt::format("mlx5_{}", i), 1, nic(i)), b.port(fmt::format("mlx5_{}", i), 1, nic(i));
  b.port("mlx5_1", 1, nic(1), "4: ACTIVE", "5: LinkUp", "200 Gb/sec (2X NDR)");
  const auto rs = discover::check_fabric({inventory("n1", a), inventory("n2", b)}, {});
  const Record& r = find(rs, "n2", "fabric_rate");
  CHECK(r.status == Status::Fail);
  CHECK(r.value == 200);
  CHECK_THAT(r.message, Catch::Contains("mlx5_1/1 at 200 Gb/s") && Catch::Contains("run at 400 Gb/s"));
  CHECK(find(rs, "n1", "fabric_rate").status == Status::Pass);

  FabricConfig floor;
  floor.min_rate_gbps = 800;  // an XDR fabric expected, NDR found everywhere
  const auto slow = discover::check_fabric({inventory("n1", a)}, floor);
  CHECK(find(slow, "n1", "fabric_rate").status == Status::Fail);
  CHECK_THAT(find(slow, "n1", "fabric_rate").message, Catch::Contains("fabric.min_rate_gbps is 800"));
}

TEST_CASE("fabric: no RDMA port FAILs a multi-node run unless the fabric is declared tcp", "[fabric]") {
  SysfsFixture empty1("fabric-none-1"), empty2("fabric-none-2");
  const auto rs = discover::check_fabric({inventory("n1", empty1), inventory("n2", empty2)}, {});
  CHECK(find(rs, "n1", "fabric_ports").status == Status::Fail);
  CHECK_THAT(find(rs, "n1", "fabric_ports").message, Catch::Contains("no RDMA port") && Catch::Contains("fabric.transport: tcp"));
  CHECK(find(rs, "n1", "fabric_rate").status == Status::Skip);
  CHECK(find(rs, "n1", "gpudirect").status == Status::Skip);

  FabricConfig tcp;
  tcp.tcp = true;
  const auto declared = discover::check_fabric({inventory("n1", empty1), inventory("n2", empty2)}, tcp);
  CHECK(find(declared, "n1", "fabric_ports").status == Status::Skip);

  const auto one_node = discover::check_fabric({inventory("n1", empty1)}, {});
  CHECK(find(one_node, "n1", "fabric_ports").status == Status::Skip);  // nothing leaves a lone node
}

TEST_CASE("fabric: eight-GPU nodes need a port per GPU; the config's count wins", "[fabric]") {
  SysfsFixture a("fabric-hgx");
  for (int i = 0; i < 4; ++i) a.port(fmt::format("mlx5_{}", i), 1, nic(i));
  const auto hgx = discover::check_fabric({inventory("n1", a, 8), inventory("n2", a, 8)}, {});
  CHECK(find(hgx, "n1", "fabric_ports").status == Status::Fail);
  CHECK(find(hgx, "n1", "fabric_ports").params.at("source") == "one per GPU");
  const auto four_gpus = discover::check_fabric({inventory("n1", a, 4), inventory("n2", a, 4)}, {});
  CHECK(find(four_gpus, "n1", "fabric_ports").status == Status::Pass);
  FabricConfig four;
  four.ports_per_node = 4;
  CHECK(find(discover::check_fabric({inventory("n1", a, 8)}, four), "n1", "fabric_ports").status == Status::Pass);
  four.ports_per_node = 5;
  CHECK(find(discover::check_fabric({inventory("n1", a, 8)}, four), "n1", "fabric_ports").status == Status::Fail);
}

TEST_CASE("fabric: GPUDirect RDMA impossible on an RDMA multi-node run FAILs unless not required", "[fabric]") {
  SysfsFixture a("fabric-gdr");
  a.port("mlx5_0", 1, nic(0));
  const auto rs = discover::check_fabric({inventory("n1", a, 2, false), inventory("n2", a, 2, true)}, {});
  CHECK(find(rs, "n1", "gpudirect").status == Status::Fail);
  CHECK_THAT(find(rs, "n1", "gpudirect").message, Catch::Contains("nvidia_peermem"));
  CHECK(find(rs, "n2", "gpudirect").status == Status::Pass);
  FabricConfig optional;
  optional.require_gpudirect = false;
  CHECK(find(discover::check_fabric({inventory("n1", a, 2, false), inventory("n2", a)}, optional), "n1", "gpudirect").status ==
        Status::Pass);
}
