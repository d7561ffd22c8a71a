// The node's RDMA ports (InfiniBand, and RoCE: Ethernet ports of RDMA-capable NICs) as sysfs
// describes them under /sys/class/infiniband: state, rate, link layer, the PCI function and
// NUMA node of the NIC, its network interfaces, and the error counters that a flapping or
// dirty link raises. Discover's inventory, nccl-scaling's line rate and every phase's
// counter snapshots read them from here.
//
// sysfs layout (drivers/infiniband/core/sysfs.c), per device <dev> and port <p>:
//   <dev>/ports/<p>/{state, phys_state, rate, link_layer}   "4: ACTIVE", "5: LinkUp",
//                                                           "400 Gb/sec (4X NDR)", "InfiniBand"
//   <dev>/ports/<p>/counters/<name>                         decimal counts (IB PMA counters)
//   <dev>/device -> the PCI function (its numa_node, its net/ interfaces)
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuaccept {

struct RdmaPort {
  std::string device;       // mlx5_0
  int port = 0;
  std::string state;        // "4: ACTIVE"
  std::string phys_state;   // "5: LinkUp"
  std::string rate;         // "400 Gb/sec (4X NDR)"
  double rate_gbps = 0;     // 400; 0 when unreadable
  std::string link_layer;   // "InfiniBand" or "Ethernet" (RoCE)
  std::string pci_bus_id;   // "0000:18:00.0"; "" when the device has no PCI function (soft RoCE)
  int numa_node = -1;
  std::vector<std::string> netdevs;  // the NIC's network interfaces (RoCE: the one it runs on)
  // Filled by assign_nearest_gpus (hw/pci_distance.h): the GPUs closest to this port on the
  // PCI tree (NVML indices) and how close, in nvidia-smi topo's words.
  std::vector<int> nearest_gpus;
  std::string gpu_distance;

  // State ACTIVE and physical state LinkUp: the port carries traffic.
  bool active() const;
  std::string name() const;  // "mlx5_0/1"
};

// Ports under `sysfs_root` (default /sys/class/infiniband; a test points it at a fixture
// tree), sorted by device and port.
std::vector<RdmaPort> read_rdma_ports(const std::string& sysfs_root = "/sys/class/infiniband");

// "400 Gb/sec (4X NDR)" -> 400, "25 Gb/sec (1X EDR)" -> 25, "2.5 Gb/sec" -> 2.5; 0 when malformed.
double parse_rate_gbps(const std::string& rate);

// The ports NCCL may use, as NCCL_IB_HCA selects them (NCCL's syntax: "mlx5_0,mlx5_1:1",
// "^mlx5_4" excludes, "=mlx5_0" matches exactly; without "=" a name matches as a prefix).
// An empty `nccl_ib_hca` keeps every port.
std::vector<RdmaPort> ports_nccl_may_use(const std::vector<RdmaPort>& ports, const std::string& nccl_ib_hca);

// Error counters of every port: "mlx5_0/1" -> {counter -> value}. The counters that a faulty
// link, cable or transceiver raises (IB spec PortCounters): link_downed, link_error_recovery,
// symbol_error, port_rcv_errors, port_rcv_remote_physical_errors, port_rcv_switch_relay_errors,
// local_link_integrity_errors, excessive_buffer_overrun_errors. port_xmit_discards and
// port_xmit_wait are left out: congestion raises them on healthy links.
using PortCounters = std::map<std::string, std::map<std::string, unsigned long long>>;
PortCounters read_port_counters(const std::string& sysfs_root = "/sys/class/infiniband");
const std::vector<std::string>& error_counter_names();

void to_json(nlohmann::json& j, const RdmaPort& p);

}  // namespace gpuaccept
