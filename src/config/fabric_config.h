// The `fabric:` section of a config: what the network between nodes is meant to be, read by
// discover (which judges the RDMA ports) and nccl-scaling (which judges what NCCL used and
// how fast). Every key is optional; docs/fabric.md says what each changes.
//
//   fabric:
//     transport: rdma          # rdma (InfiniBand/RoCE, the default) or tcp: Ethernet on purpose
//     ports_per_node: 8        # active RDMA ports each node must have (default: the fleet's mode,
//                              # and one per GPU on nodes of 8 GPUs or more)
//     min_rate_gbps: 400       # every active port at least this fast (default: none, the
//                              # fleet's mode rate only)
//     require_gpudirect: true  # a node with active RDMA ports must allow GPUDirect RDMA
//     reference_port_gbps: 400 # the line rate per GPU assumed where no RDMA port is found
//                              # and the fabric is not declared tcp (HGX H100/H200 reference
//                              # design: one 400 Gb/s NDR port per GPU)
#pragma once

#include <optional>
#include <string>

#include "config/config.h"

namespace gpuaccept {

struct FabricConfig {
  bool tcp = false;                    // transport: tcp
  std::optional<int> ports_per_node;
  std::optional<double> min_rate_gbps;
  bool require_gpudirect = true;
  double reference_port_gbps = 400;
};

// Throws InputError naming the file, line and key (an unknown key, a transport that is neither
// rdma nor tcp, a count or rate that is not positive).
FabricConfig read_fabric_config(const Config& config);

}  // namespace gpuaccept
