// discover's judgement of the fabric between nodes, from every rank's inventory (its
// `infiniband` ports, hw/rdma_ports.h, and `gpudirect`, hw/gpudirect.h): pure functions, run by
// rank 0, unit-tested on inventories built from sysfs fixture trees (tests/unit/test_fabric_checks.cpp).
// One record of each per node:
//  - fabric_ports: the node's active RDMA ports (ACTIVE and LinkUp) number at least the
//    expected: fabric.ports_per_node, else the fleet's mode (ties: the larger count, so the
//    node with ports down is the odd one), and one per GPU on nodes of 8 GPUs or more (the HGX
//    reference design: a 400 Gb/s port per GPU). A node with no RDMA port at all on a
//    multi-node run FAILs unless fabric.transport is tcp. The message names every port that
//    is not active, with its state.
//  - fabric_rate: every active port runs at the fleet's mode rate (ties: the faster), and at
//    least fabric.min_rate_gbps when set; a port trained down (half rate) is named.
//  - gpudirect: GPUDirect RDMA is possible where active ports are (nvidia_peermem or dma-buf);
//    without it NCCL stages every byte through host memory. FAIL on a multi-node RDMA run when
//    fabric.require_gpudirect (default), else recorded.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "config/fabric_config.h"
#include "results/record.h"

namespace gpuaccept::discover {

std::vector<Record> check_fabric(const std::vector<nlohmann::json>& inventories, const FabricConfig& config);

}  // namespace gpuaccept::discover
