// Which ranks measure together at each scale, decided identically on every rank from the
// job's placement alone (no communication), so every rank calls ncclCommSplit with the
// right color and knows, after a failure, which ranks it was waiting for.
//
//  - intra_node: color = node index: all GPUs of each node; the nodes run concurrently and
//    each node's figures are recorded under its hostname. A node with one rank sits out.
//  - inter_node: one GPU per node (local rank 0 of each node), the classic nccl-tests
//    "-N 1 per node" figure; the other GPUs stay idle so they do not share the NICs.
//  - all: every rank (the world communicator itself, no split).
// A scale with no group of >= 2 ranks is skipped, and so is `all` when it is the same set
// of ranks as intra_node (one node) or inter_node (one GPU per node): it would measure
// the same thing twice.
//
// Pairwise isolation, in round-robin rounds (schedule.h), each round one ncclCommSplit:
//  - gpu_pair: two GPUs of one node; every node's pairs run concurrently.
//  - node_pair: two nodes: local rank 0 of each (one_gpu) or all GPUs of both (all_gpus).
#pragma once

#include <string>
#include <vector>

#include "cuda/rank_info.h"

#include "nccl-scaling/options.h"

namespace gpuaccept::nccl_scaling {

// The job's placement, as World reports it.
struct Topology {
  std::vector<int> rank_node;            // node index of each world rank
  std::vector<std::string> node_names;   // by node index
  int size() const { return static_cast<int>(rank_node.size()); }
  int local_rank(int rank) const;        // position among the ranks of its node
  std::vector<int> ranks_of_node(int node) const;
  int node_count() const { return static_cast<int>(node_names.size()); }
};

// Ranks that measure together: members are world ranks, ascending = their rank in the
// split communicator (key = world rank).
struct Group {
  int color = 0;
  std::vector<int> members;
  std::string node;  // the host when the group is one node's, else ""
  std::string a, b;  // pairs: what the record's `a` and `b` params say
};

struct ScalePlan {
  Scale scale = Scale::All;
  std::string skip_reason;  // non-empty: the whole scale is skipped
  std::vector<Group> groups;  // the groups that run (>= 2 ranks each)
  // Nodes (intra_node) with too few ranks to take part: host -> reason.
  std::vector<std::pair<std::string, std::string>> skipped_nodes;
  bool runs() const { return skip_reason.empty() && !groups.empty(); }
};

// requested: the scales the run asked for (`all` is a duplicate only of a scale that runs).
ScalePlan plan_scale(Scale scale, const Topology& topo, const std::vector<Scale>& requested);

// The group `rank` belongs to, or nullptr.
const Group* group_of(const std::vector<Group>& groups, int rank);

struct PairPlan {
  Scale scale = Scale::NodePair;
  std::string skip_reason;
  std::vector<std::vector<Group>> rounds;  // each round's concurrent pairs
  bool runs() const { return skip_reason.empty() && !rounds.empty(); }
};

// gpu_index_of_rank: the GPU index the records name for each world rank (its index on the
// node, hw/node_gpu_index.h, when known, else its local rank).
PairPlan plan_gpu_pairs(const Topology& topo, const std::vector<int>& gpu_index_of_rank);
PairPlan plan_node_pairs(const Topology& topo, PairMode mode);

// What NCCL will use between the ranks of a group, from what the hardware (RankLinks, in
// cuda/rank_info.h) and the environment say (see README: not read back from NCCL).
struct NcclNetEnv {
  std::string nccl_net;     // NCCL_NET
  std::string ib_disable;   // NCCL_IB_DISABLE
  std::string p2p_disable;  // NCCL_P2P_DISABLE
};
std::string classify_transport(const std::vector<int>& members, const Topology& topo,
                               const std::vector<RankLinks>& links, const NcclNetEnv& env);

// The hosts as NCCL sees them, which decide its transports: ranks with the same NCCL_HOSTID
// (or, where unset, the same hostname) are one host to NCCL. The same as the Slurm nodes,
// except where NCCL_HOSTID splits a node (tests/gpu/nccl_two_nodes.sh, ranks_on_one_gpu.sh).
Topology nccl_hosts(const std::vector<RankInfo>& ranks);

}  // namespace gpuaccept::nccl_scaling
