// The RDMA port inventory, its error counters, PCI distances and GPUDirect detection, on
// made-up sysfs trees (sysfs_fixture.h): a healthy port, a port Down, a port at half rate,
// counters that rise, and a node without GPUDirect.
#include <catch2/catch.hpp>

#include "hw/gpudirect.h"
#include "hw/pci_distance.h"
#include "hw/rdma_ports.h"
#include "sysfs_fixture.h"

using namespace gpuaccept;
using gpuaccept::testing::SysfsFixture;

namespace {
// GPU 0 and mlx5_0 share a PCIe switch; GPU 1 and mlx5_1 another under the same root complex;
// mlx5_2 hangs off the other socket's root complex.
const std::vector<std::string> kGpu0 = {"pci0000:17", "0000:17:01.0", "0000:18:00.0", "0000:19:00.0", "0000:1a:00.0"};
const std::vector<std::string> kNic0 = {"pci0000:17", "0000:17:01.0", "0000:18:00.0", "0000:19:01.0", "0000:1b:00.0"};
const std::vector<std::string> kGpu1 = {"pci0000:17", "0000:17:02.0", "0000:28:00.0", "0000:29:00.0", "0000:2a:00.0"};
const std::vector<std::string> kNic1 = {"pci0000:17", "0000:17:02.0", "0000:28:00.0", "0000:29:01.0", "0000:2b:00.0"};
const std::vector<std::string> kNic2 = {"pci0000:97", "0000:97:01.0", "0000:98:00.0"};
}  // namespace

TEST_CASE("RDMA ports: state, rate, link layer and PCI function from sysfs", "[fabric]") {
  SysfsFixture fx("rdma-ports");
  fx.port("mlx5_0", 1, kNic0);
  fx.port("mlx5_1", 1, kNic1, "1: DOWN", "3: Disabled");
  fx.port("mlx5_2", 1, kNic2, "4: ACTIVE", "5: LinkUp", "200 Gb/sec (2X NDR)", "Ethernet");
  const auto ports = read_rdma_ports(fx.infiniband());
  REQUIRE(ports.size() == 3);
  CHECK(ports[0].name() == "mlx5_0/1");
  CHECK(ports[0].active());
  CHECK(ports[0].rate_gbps == 400);
  CHECK(ports[0].link_layer == "InfiniBand");
  CHECK(ports[0].pci_bus_id == "0000:1b:00.0");
  CHECK_FALSE(ports[1].active());  // Down: not counted as a port that carries traffic
  CHECK(ports[2].rate_gbps == 200);
  CHECK(ports[2].link_layer == "Ethernet");
  CHECK(read_rdma_ports(fx.infiniband() + "/absent").empty());
}

TEST_CASE("line rates parse from the kernel's text", "[fabric]") {
  CHECK(parse_rate_gbps("400 Gb/sec (4X NDR)") == 400);
  CHECK(parse_rate_gbps("200 Gb/sec (2X NDR)") == 200);  // the same NIC trained down to half its lanes
  CHECK(parse_rate_gbps("2.5 Gb/sec (1X SDR)") == 2.5);
  CHECK(parse_rate_gbps("") == 0);
  CHECK(parse_rate_gbps("fast") == 0);
}

TEST_CASE("NCCL_IB_HCA selects ports as NCCL does", "[fabric]") {
  std::vector<RdmaPort> ports(3);
  ports[0].device = "mlx5_0", ports[0].port = 1;
  ports[1].device = "mlx5_1", ports[1].port = 1;
  ports[2].device = "mlx5_10", ports[2].port = 1;
  auto names = [](const std::vector<RdmaPort>& ps) {
    std::vector<std::string> n;
    for (const auto& p : ps) n.push_back(p.name());
    return n;
  };
  CHECK(names(ports_nccl_may_use(ports, "")).size() == 3);
  CHECK(names(ports_nccl_may_use(ports, "mlx5_1")) == std::vector<std::string>{"mlx5_1/1", "mlx5_10/1"});  // a prefix
  CHECK(names(ports_nccl_may_use(ports, "=mlx5_1")) == std::vector<std::string>{"mlx5_1/1"});
  CHECK(names(ports_nccl_may_use(ports, "^mlx5_1")) == std::vector<std::string>{"mlx5_0/1"});
  CHECK(names(ports_nccl_may_use(ports, "mlx5_0:2")).empty());  // no port 2
}

TEST_CASE("error counters are read per port, and a rise is visible between two reads", "[fabric]") {
  SysfsFixture fx("rdma-counters");
  fx.port("mlx5_0", 1, kNic0, "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", "InfiniBand",
          {{"link_downed", 0}, {"symbol_error", 3}, {"port_rcv_errors", 0}, {"port_xmit_discards", 99}});
  const PortCounters before = read_port_counters(fx.infiniband());
  REQUIRE(before.count("mlx5_0/1"));
  CHECK(before.at("mlx5_0/1").at("symbol_error") == 3);
  CHECK(before.at("mlx5_0/1").count("port_xmit_discards") == 0);  // congestion, not a fault: not read
  CHECK(before.at("mlx5_0/1").count("link_error_recovery") == 0);  // no such file: absent, not 0
  fx.counter("mlx5_0", 1, "link_downed", 2);  // the link flapped twice
  const PortCounters after = read_port_counters(fx.infiniband());
  CHECK(after.at("mlx5_0/1").at("link_downed") == 2);
}

TEST_CASE("PCI distance as nvidia-smi topo names it, and the ports nearest each GPU", "[fabric]") {
  SysfsFixture fx("pci-distance");
  fx.pci_function(kGpu0, 0);
  fx.pci_function(kGpu1, 0);
  fx.port("mlx5_0", 1, kNic0);
  fx.port("mlx5_1", 1, kNic1);
  fx.port("mlx5_2", 1, kNic2);
  const auto dev = fx.pci_devices();
  const auto g0 = pci_chain("00000000:1A:00.0", dev);  // NVML's spelling
  REQUIRE(g0.size() == kGpu0.size());
  CHECK(pci_distance(g0, 0, pci_chain("0000:1b:00.0", dev), 0) == PciDistance::Pix);
  CHECK(pci_distance(g0, 0, pci_chain("0000:2b:00.0", dev), 0) == PciDistance::Phb);
  CHECK(pci_distance(g0, 0, pci_chain("0000:98:00.0", dev), 0) == PciDistance::Node);
  CHECK(pci_distance(g0, 0, pci_chain("0000:98:00.0", dev), 1) == PciDistance::Sys);
  CHECK(pci_distance(g0, 0, {}, 0) == PciDistance::Unknown);

  auto ports = read_rdma_ports(fx.infiniband());
  const std::vector<GpuLocation> gpus = {{0, "00000000:1A:00.0", 0}, {1, "00000000:2A:00.0", 0}};
  assign_nearest_gpus(ports, gpus, dev);
  CHECK(ports[0].nearest_gpus == std::vector<int>{0});
  CHECK(ports[0].gpu_distance == "PIX");
  CHECK(ports[1].nearest_gpus == std::vector<int>{1});
  CHECK(ports[2].nearest_gpus == std::vector<int>{0, 1});  // equally far from both
  const auto near1 = ports_nearest_to(gpus[1], ports, dev);
  REQUIRE(near1.size() == 1);
  CHECK(ports[near1.front()].device == "mlx5_1");
}

TEST_CASE("GPUDirect RDMA: nvidia_peermem makes it possible; without it and dma-buf it is not", "[fabric]") {
  SysfsFixture fx("gpudirect");
  const GpuDirectSupport none = read_gpudirect_support(-1, fx.modules());
  CHECK_FALSE(none.possible());
  CHECK_THAT(none.detail, Catch::Contains("nvidia_peermem not loaded"));
  fx.module("nvidia_peermem");
  const GpuDirectSupport peermem = read_gpudirect_support(-1, fx.modules());
  CHECK(peermem.possible());
  CHECK(peermem.peermem);
  CHECK_FALSE(peermem.dmabuf);  // no GPU asked
}
