#include "nccl-scaling/plan.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "nccl-scaling/schedule.h"

namespace gpuaccept::nccl_scaling {

int Topology::local_rank(int rank) const {
  return static_cast<int>(std::count(rank_node.begin(), rank_node.begin() + rank, rank_node[rank]));
}

std::vector<int> Topology::ranks_of_node(int node) const {
  std::vector<int> out;
  for (int r = 0; r < size(); ++r)
    if (rank_node[r] == node) out.push_back(r);
  return out;
}

namespace {

bool requested(const std::vector<Scale>& scales, Scale s) {
  return std::find(scales.begin(), scales.end(), s) != scales.end();
}

bool one_rank_per_node(const Topology& topo) {
  for (int n = 0; n < topo.node_count(); ++n)
    if (topo.ranks_of_node(n).size() > 1) return false;
  return true;
}

}  // namespace

ScalePlan plan_scale(Scale scale, const Topology& topo, const std::vector<Scale>& requested_scales) {
  ScalePlan p;
  p.scale = scale;
  if (topo.size() < 2) {
    p.skip_reason = "one GPU only";
    return p;
  }
  switch (scale) {
    case Scale::IntraNode:
    case Scale::HcaLoopback:  // the same groups: each node's GPUs (hca_loopback.h runs them apart)
      for (int n = 0; n < topo.node_count(); ++n) {
        auto members = topo.ranks_of_node(n);
        if (members.size() < 2) {
          p.skipped_nodes.emplace_back(topo.node_names[n], "one GPU on this node");
          continue;
        }
        Group g;
        g.color = n;
        g.members = std::move(members);
        g.node = topo.node_names[n];
        p.groups.push_back(std::move(g));
      }
      if (p.groups.empty()) p.skip_reason = "one GPU per node";
      break;
    case Scale::InterNode: {
      if (topo.node_count() < 2) {
        p.skip_reason = "one node only";
        break;
      }
      Group g;
      for (int n = 0; n < topo.node_count(); ++n) g.members.push_back(topo.ranks_of_node(n).front());
      std::sort(g.members.begin(), g.members.end());
      p.groups.push_back(std::move(g));
      break;
    }
    case Scale::All:
      if (topo.node_count() == 1 && requested(requested_scales, Scale::IntraNode)) {
        p.skip_reason = "identical to intra_node: the job has one node";
        break;
      }
      if (one_rank_per_node(topo) && requested(requested_scales, Scale::InterNode)) {
        p.skip_reason = "identical to inter_node: one GPU per node";
        break;
      }
      {
        Group g;
        for (int r = 0; r < topo.size(); ++r) g.members.push_back(r);
        if (topo.node_count() == 1) g.node = topo.node_names[0];
        p.groups.push_back(std::move(g));
      }
      break;
    case Scale::GpuPair:
    case Scale::NodePair:
      p.skip_reason = "not a collective scale";
      break;
  }
  return p;
}

const Group* group_of(const std::vector<Group>& groups, int rank) {
  for (const auto& g : groups)
    if (std::find(g.members.begin(), g.members.end(), rank) != g.members.end()) return &g;
  return nullptr;
}

PairPlan plan_gpu_pairs(const Topology& topo, const std::vector<int>& gpu_index_of_rank) {
  PairPlan p;
  p.scale = Scale::GpuPair;
  std::vector<std::vector<Round>> per_node;
  std::size_t rounds = 0;
  for (int n = 0; n < topo.node_count(); ++n) {
    per_node.push_back(round_robin(static_cast<int>(topo.ranks_of_node(n).size())));
    rounds = std::max(rounds, per_node.back().size());
  }
  if (rounds == 0) {
    p.skip_reason = topo.size() < 2 ? "one GPU only" : "one GPU per node";
    return p;
  }
  auto gpu_name = [&](int rank) {
    const int idx = rank < static_cast<int>(gpu_index_of_rank.size()) && gpu_index_of_rank[rank] >= 0
                        ? gpu_index_of_rank[rank]
                        : topo.local_rank(rank);
    return std::to_string(idx);
  };
  for (std::size_t r = 0; r < rounds; ++r) {
    std::vector<Group> round;
    for (int n = 0; n < topo.node_count(); ++n) {
      if (r >= per_node[n].size()) continue;
      const auto ranks = topo.ranks_of_node(n);
      int k = 0;
      for (const auto& [a, b] : per_node[n][r]) {
        Group g;
        g.color = n * 1024 + k++;
        g.members = {ranks[a], ranks[b]};
        g.node = topo.node_names[n];
        g.a = gpu_name(ranks[a]);
        g.b = gpu_name(ranks[b]);
        round.push_back(std::move(g));
      }
    }
    p.rounds.push_back(std::move(round));
  }
  return p;
}

PairPlan plan_node_pairs(const Topology& topo, PairMode mode) {
  PairPlan p;
  p.scale = Scale::NodePair;
  if (topo.node_count() < 2) {
    p.skip_reason = "one node only";
    return p;
  }
  for (const auto& schedule_round : round_robin(topo.node_count())) {
    std::vector<Group> round;
    int k = 0;
    for (const auto& [x, y] : schedule_round) {
      Group g;
      g.color = k++;
      if (mode == PairMode::OneGpu) {
        g.members = {topo.ranks_of_node(x).front(), topo.ranks_of_node(y).front()};
      } else {
        g.members = topo.ranks_of_node(x);
        const auto more = topo.ranks_of_node(y);
        g.members.insert(g.members.end(), more.begin(), more.end());
      }
      std::sort(g.members.begin(), g.members.end());
      g.a = topo.node_names[x];
      g.b = topo.node_names[y];
      round.push_back(std::move(g));
    }
    p.rounds.push_back(std::move(round));
  }
  return p;
}

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool nvlinked(const RankLinks& x, const RankLinks& y) {
  if (x.nvswitch && y.nvswitch) return true;
  auto has = [](const std::vector<int>& v, int i) { return i >= 0 && std::find(v.begin(), v.end(), i) != v.end(); };
  return has(x.nvlink_peers, y.nvml_index) || has(y.nvlink_peers, x.nvml_index);
}

// Ranks of one node: NVLink when every pair is wired, else PCIe (NCCL's P2P or SHM).
std::string intra_kind(const std::vector<int>& ranks, const std::vector<RankLinks>& links, const NcclNetEnv& env) {
  if (env.p2p_disable == "1") return "SHM";
  for (int r : ranks)
    if (!links.at(static_cast<std::size_t>(r)).known) return "P2P/SHM (NVLink unknown: no NVML)";
  for (std::size_t i = 0; i < ranks.size(); ++i)
    for (std::size_t j = i + 1; j < ranks.size(); ++j) {
      const auto& x = links.at(static_cast<std::size_t>(ranks[i]));
      const auto& y = links.at(static_cast<std::size_t>(ranks[j]));
      if (!nvlinked(x, y)) return "PCIe";
    }
  return "NVLink";
}

}  // namespace

std::string classify_transport(const std::vector<int>& members, const Topology& topo,
                               const std::vector<RankLinks>& links, const NcclNetEnv& env) {
  std::map<int, std::vector<int>> by_node;
  for (int r : members) by_node[topo.rank_node.at(static_cast<std::size_t>(r))].push_back(r);
  if (by_node.size() == 1) return intra_kind(members, links, env);

  bool ib = env.ib_disable != "1";
  for (int r : members) ib = ib && links.at(static_cast<std::size_t>(r)).ib;
  const std::string net_env = lower(env.nccl_net);
  std::string net;
  if (!net_env.empty() && net_env != "ib" && net_env != "socket") net = "NET/" + env.nccl_net;  // a plugin
  else if (ib && net_env != "socket") net = "NET/IB";
  else net = "NET/Socket";

  std::string intra;
  for (const auto& [node, ranks] : by_node) {
    if (ranks.size() < 2) continue;
    const std::string k = intra_kind(ranks, links, env);
    if (intra.empty() || k != "NVLink") intra = k;
  }
  return intra.empty() ? net : intra + "+" + net;
}

Topology nccl_hosts(const std::vector<RankInfo>& ranks) {
  Topology t;
  std::map<std::string, int> index;
  for (const RankInfo& r : ranks) {
    const std::string host = r.nccl_host_id.empty() ? r.host : r.nccl_host_id;
    const auto [it, added] = index.try_emplace(host, static_cast<int>(t.node_names.size()));
    if (added) t.node_names.push_back(host);
    t.rank_node.push_back(it->second);
  }
  return t;
}

}  // namespace gpuaccept::nccl_scaling
