// Judges what NCCL really used between nodes at one scale (nccl_log.h: its own log, per
// rank) against what the nodes have (each rank's RankLinks: active RDMA ports, GPUDirect
// possible) and what the fabric is meant to be (config/fabric_config.h). One record, test
// `nccl_transport`, job-level (a verdict on the job's fabric; the node-level faults behind it,
// a port down or no RDMA port, are discover's records):
//   FAIL  inter-node traffic over NET/Socket on nodes that have active RDMA ports (NCCL fell
//         back: NCCL_IB_DISABLE, no libibverbs/rdma-core in the job, NCCL_IB_HCA naming
//         nothing, a subnet manager down);
//   FAIL  over NET/Socket where no RDMA port exists and fabric.transport is not tcp;
//   FAIL  over NET/IB without GPUDirect RDMA on nodes where it is possible (with
//         fabric.require_gpudirect, the default);
//   PASS  otherwise; SKIP when the log was not observed or shows no traffic between nodes.
// The message names the hosts, the transport and the line rate the group was expected to
// reach (line_rate.h).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "config/fabric_config.h"
#include "cuda/rank_info.h"
#include "nccl-scaling/line_rate.h"
#include "results/record.h"

namespace gpuaccept::nccl_scaling {

struct TransportEvidence {
  std::string scale;
  std::vector<int> members;                  // world ranks of every group at this scale
  std::vector<std::set<std::string>> kinds;  // by world rank: transport kinds its NCCL logged (the whole sweep)
  std::string not_observed;                  // non-empty: why NCCL's log could not be read
};

Record judge_nccl_transport(const TransportEvidence& e, const std::vector<RankInfo>& infos, const FabricConfig& fabric,
                            const LineRate& expected);

}  // namespace gpuaccept::nccl_scaling
