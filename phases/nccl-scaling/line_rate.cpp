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

// Each rank's port: the first of its nearest ports not taken by an earlier rank of the node,
// else (more ranks than ports) the first of them, shared. "" where it has none.
std::vector<const NearPort*> assign_ports(const std::vector<int>& ranks, const std::vector<RankInfo>& infos) {
  std::set<std::string> taken;
  std::vector<const NearPort*> out;
  for (const int r : ranks) {
    const auto& near = infos.at(static_cast<std::size_t>(r)).links.nearest_ports;
    auto it = std::find_if(near.begin(), near.end(), [&](const NearPort& p) { return !taken.count(p.name); });
    if (it == near.end()) it = near.begin();
    out.push_back(it == near.end() ? nullptr : &*it);
    if (it != near.end()) taken.insert(it->name);
  }
  return out;
}

}  // namespace

LineRate loopback_line_rate(const std::vector<int>& members, const std::vector<RankInfo>& infos) {
  const auto ports = assign_ports(members, infos);
  std::map<std::string, int> sharers;
  for (const NearPort* p : ports)
    if (p) ++sharers[p->name];
  LineRate out;
  out.source = "ports";
  bool first = true;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    if (!ports[i]) return {0, "none", "none", infos.at(static_cast<std::size_t>(members[i])).host, "no port"};
    const double share = ports[i]->gbps / sharers[ports[i]->name];
    if (first || share < out.gbps) {
      out.gbps = share;
      out.ports = sharers[ports[i]->name] > 1 ? fmt::format("{} shared by {} GPUs", ports[i]->name, sharers[ports[i]->name])
                                              : ports[i]->name;
      out.fabric = ports[i]->link_layer == "Ethernet" ? "roce" : "infiniband";
      out.node = infos.at(static_cast<std::size_t>(members[i])).host;
    }
    first = false;
  }
  return out;
}

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
