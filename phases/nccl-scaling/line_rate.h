// The line rate a group of ranks spanning nodes can drive between nodes, which the report
// judges their bus bandwidth against (rule `min_line_rate_fraction`, docs/fabric.md).
//
// nccl-tests' busbw is the bandwidth each rank's slowest link carries (its PERFORMANCE.md):
// for a ring over N ranks every rank sends and receives 2(N-1)/N of the data, and across
// nodes the NICs are that slowest link. With k GPUs of a node in the group, each leaving
// through its own nearest port (NCCL gives each GPU its closest NIC), the node's share is
// carried by k distinct ports at once, so busbw approaches the sum of those ports' rates
// (2 nodes x 8 H100 with 8x400 Gb/s: 8 x 50 GB/s = 400 GB/s). Per node of the group:
//   line rate = sum of the rates of the distinct active ports nearest to its ranks' GPUs
//               (each rank takes the first of its nearest ports not yet taken)
// and the group's line rate is the lowest over its nodes. Where a node has no RDMA port:
// the speed of NCCL's socket interface when the fabric is declared tcp, else the configured
// reference (fabric.reference_port_gbps per GPU: what the node was meant to have).
#pragma once

#include <string>
#include <vector>

#include "cuda/rank_info.h"
#include "nccl-scaling/plan.h"

namespace gpuaccept::nccl_scaling {

struct LineRate {
  double gbps = 0;     // Gb/s on the group's most limited node
  std::string source;  // "ports", "ethernet", "reference"
  std::string fabric;  // "infiniband", "roce", "tcp", "none"
  std::string node;    // the most limited node
  std::string ports;   // what was counted there: "mlx5_0/1+mlx5_1/1", "eth0", "reference"
};

// `members`: world ranks of the group; `topo`: the Slurm nodes (Topology of the sweep).
LineRate line_rate_of(const std::vector<int>& members, const Topology& topo, const std::vector<RankInfo>& infos,
                      bool tcp, double reference_port_gbps);

// One node's GPUs all-reducing through their own HCAs, NCCL's P2P and SHM off (hca_loopback.h):
// every hop of every ring now leaves through the sender's port and enters through the
// receiver's, so each rank's 2(n-1)/n of the data goes out through its one port, and busbw
// approaches the rate of the port each rank leaves through, shared where ranks share one:
//   line rate = the lowest over the node's ranks of (its port's rate / ranks on that port)
// (8 H100 with 8 x 400 Gb/s: 400 Gb/s, 50 GB/s; not the sum, as across nodes).
LineRate loopback_line_rate(const std::vector<int>& members, const std::vector<RankInfo>& infos);

}  // namespace gpuaccept::nccl_scaling
