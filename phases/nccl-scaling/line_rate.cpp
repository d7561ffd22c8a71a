#include "nccl-scaling/line_rate.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpuaccept::nccl_scaling {

namespace {

LineRate node_line_rate(const std::vector<int>& ranks, const std::vector<RankInfo>& infos, bool tcp,
                        double reference_port_gbps) {
  LineRate out;
  std::set<std::string> taken;
  std::vector<std::string> names;
  std::map<std::string, int> layers;
  for (const int r : ranks) {
    const auto& near = infos.at(static_cast<std::size_t>(r)).links.nearest_ports;
    const auto free = std::find_if(near.begin(), near.end(), [&](const NearPort& p) { return !taken.count(p.name); });
    if (free == near.end()) continue;  // shares a port another rank of the node already counts
    taken.insert(free->name);
    names.push_back(free->name);
    out.gbps += free->gbps;
    ++layers[free->link_layer];
  }
  if (!names.empty()) {
    out.source = "ports";
    out.ports = fmt::format("{}", fmt::join(names, "+"));
    const bool ib = layers["InfiniBand"] >= layers["Ethernet"];
    out.fabric = ib ? "infiniband" : "roce";
    return out;
  }
  const RankInfo& first = infos.at(static_cast<std::size_t>(ranks.front()));
  if (tcp) {
    out.source = "ethernet";
    out.fabric = "tcp";
    out.gbps = first.links.ethernet_gbps;
    out.ports = "the socket interface";
  } else {
    out.source = "reference";
    out.fabric = "none";
    out.gbps = reference_port_gbps * static_cast<double>(ranks.size());
    out.ports = fmt::format("{} x {} Gb/s (fabric.reference_port_gbps)", ranks.size(), reference_port_gbps);
  }
  return out;
}

}  // namespace

LineRate line_rate_of(const std::vector<int>& members, const Topology& topo, const std::vector<RankInfo>& infos,
                      bool tcp, double reference_port_gbps) {
  std::map<int, std::vector<int>> by_node;
  for (const int r : members) by_node[topo.rank_node.at(static_cast<std::size_t>(r))].push_back(r);
  LineRate lowest;
  bool first = true;
  for (const auto& [node, ranks] : by_node) {
    LineRate n = node_line_rate(ranks, infos, tcp, reference_port_gbps);
    n.node = topo.node_names.at(static_cast<std::size_t>(node));
    if (first || n.gbps < lowest.gbps) lowest = n;
    first = false;
  }
  return lowest;
}

}  // namespace gpuaccept::nccl_scaling
