#include "discover/fabric_checks.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpuaccept::discover {
using nlohmann::json;

namespace {

struct NodeFabric {
  std::string host;
  int gpus = 0;
  std::vector<const json*> ports, active;
  bool gdr_possible = false;
  std::string gdr_detail;
};

bool port_active(const json& p) {
  if (p.contains("active")) return p.value("active", false);  // written by this version
  return p.value("state", "").find("ACTIVE") != std::string::npos &&
         p.value("phys_state", "").find("LinkUp") != std::string::npos;
}

double port_rate(const json& p) {
  if (p.contains("rate_gbps")) return p.value("rate_gbps", 0.0);
  return std::atof(p.value("rate", "").c_str());
}

std::string port_name(const json& p) { return fmt::format("{}/{}", p.value("device", "?"), p.value("port", 0)); }

std::vector<NodeFabric> nodes_of(const std::vector<json>& inventories) {
  std::vector<NodeFabric> out;
  for (const auto& inv : inventories) {
    const std::string host = inv.value("host", "?");
    auto it = std::find_if(out.begin(), out.end(), [&](const NodeFabric& n) { return n.host == host; });
    const bool first = it == out.end();
    if (first) {
      it = out.insert(out.end(), NodeFabric{host});
      if (inv.contains("gpus")) it->gpus = static_cast<int>(inv.at("gpus").value("node_gpus", json::array()).size());
      // Pointers into the inventories themselves, which outlive this: never into a copy.
      if (const auto ports = inv.find("infiniband"); ports != inv.end() && ports->is_array())
        for (const auto& p : *ports) {
          it->ports.push_back(&p);
          if (port_active(p)) it->active.push_back(&p);
        }
    }
    // GPUDirect is per GPU (dma-buf) and per node (the module): possible when any rank says so.
    const json g = inv.value("gpudirect", json::object());
    if (g.value("possible", false)) it->gdr_possible = true;
    if (it->gdr_detail.empty() || g.value("possible", false)) it->gdr_detail = g.value("detail", "");
  }
  return out;
}

// The most common value; ties go to the larger (the node that lost ports or rate is the odd one).
template <typename T>
T mode_of(const std::vector<T>& values) {
  std::map<T, int> count;
  for (const T& v : values) ++count[v];
  T best{};
  int best_n = 0;
  for (const auto& [v, n] : count)
    if (n >= best_n) best = v, best_n = n;
  return best;
}

Record node_record(const std::string& host, const std::string& test) {
  Record r;
  r.rank = kJobLevel;
  r.node = host;
  r.test = test;
  return r;
}

std::string inactive_ports(const NodeFabric& n) {
  std::vector<std::string> out;
  for (const json* p : n.ports)
    if (!port_active(*p))
      out.push_back(fmt::format("{} {} / {}", port_name(*p), p->value("state", "?"), p->value("phys_state", "?")));
  return fmt::format("{}", fmt::join(out, ", "));
}

}  // namespace

std::vector<Record> check_fabric(const std::vector<json>& inventories, const FabricConfig& config) {
  const auto nodes = nodes_of(inventories);
  const bool multi_node = nodes.size() >= 2;
  std::vector<int> active_counts;
  std::vector<double> rates;
  for (const auto& n : nodes) {
    active_counts.push_back(static_cast<int>(n.active.size()));
    for (const json* p : n.active) rates.push_back(port_rate(*p));
  }
  const int fleet_ports = active_counts.empty() ? 0 : mode_of(active_counts);
  const double fleet_rate = rates.empty() ? 0 : mode_of(rates);

  std::vector<Record> out;
  for (const auto& n : nodes) {
    const int active = static_cast<int>(n.active.size());
    // --- fabric_ports
    Record ports = node_record(n.host, "fabric_ports");
    ports.metric = "active_ports";
    ports.unit = "count";
    ports.value = active;
    if (n.ports.empty() && config.tcp) {
      ports.status = Status::Skip;
      ports.message = "no RDMA port; fabric.transport is tcp: Ethernet between nodes on purpose";
    } else if (n.ports.empty() && !multi_node && !config.ports_per_node) {
      ports.status = Status::Skip;
      ports.message = "no RDMA port on this node; one node only, so no traffic leaves it";
    } else if (n.ports.empty()) {
      ports.status = Status::Fail;
      ports.message = config.ports_per_node
                          ? fmt::format("no RDMA port found, {} expected (fabric.ports_per_node)", *config.ports_per_node)
                          : "no RDMA port (InfiniBand or RoCE) found on a multi-node run: NCCL can only use TCP "
                            "sockets between nodes; set fabric.transport: tcp if that is meant";
    } else {
      int expected = config.ports_per_node.value_or(fleet_ports);
      std::string source = config.ports_per_node ? "config" : "fleet";
      if (!config.ports_per_node && n.gpus >= 8 && expected < n.gpus) {
        expected = n.gpus;
        source = "one per GPU";
      }
      ports.params = {{"expected", std::to_string(expected)}, {"source", source}};
      const std::string down = inactive_ports(n);
      ports.status = active >= expected ? Status::Pass : Status::Fail;
      ports.message = active >= expected
                          ? fmt::format("{} active RDMA ports, {} expected ({}){}", active, expected, source,
                                        down.empty() ? "" : "; not active, as on the fleet: " + down)
                          : fmt::format("{} active RDMA ports, {} expected ({}); not active: {}", active, expected,
                                        source, down.empty() ? "(none listed)" : down);
    }
    out.push_back(std::move(ports));

    // --- fabric_rate
    Record rate = node_record(n.host, "fabric_rate");
    rate.metric = "min_rate_gbps";
    rate.unit = "Gb/s";
    if (n.active.empty()) {
      rate.status = Status::Skip;
      rate.message = "no active RDMA port";
    } else {
      std::vector<std::string> slow;
      double lowest = 0;
      for (const json* p : n.active) {
        const double r = port_rate(*p);
        lowest = lowest == 0 ? r : std::min(lowest, r);
        if (r < fleet_rate || (config.min_rate_gbps && r < *config.min_rate_gbps))
          slow.push_back(fmt::format("{} at {} Gb/s ({})", port_name(*p), r, p->value("rate", "")));
      }
      rate.value = lowest;
      rate.params = {{"expected_gbps", fmt::format("{}", fleet_rate)}};
      if (config.min_rate_gbps) rate.params["min_gbps"] = fmt::format("{}", *config.min_rate_gbps);
      rate.status = slow.empty() ? Status::Pass : Status::Fail;
      rate.message = slow.empty()
                         ? fmt::format("{} active ports at {} Gb/s or more (the fleet's ports run at {}{})", n.active.size(),
                                       lowest, fleet_rate,
                                       config.min_rate_gbps ? fmt::format(", fabric.min_rate_gbps {}", *config.min_rate_gbps) : "")
                         : fmt::format("{}: the fleet's ports run at {} Gb/s{}", fmt::join(slow, ", "), fleet_rate,
                                       config.min_rate_gbps ? fmt::format(", fabric.min_rate_gbps is {}", *config.min_rate_gbps) : "");
    }
    out.push_back(std::move(rate));

    // --- gpudirect
    Record gdr = node_record(n.host, "gpudirect");
    gdr.metric = "possible";
    gdr.value = n.gdr_possible ? 1 : 0;
    gdr.message = n.gdr_detail;
    if (n.active.empty()) {
      gdr.status = Status::Skip;
      gdr.message = "no active RDMA port: GPUDirect RDMA has nothing to serve" + (n.gdr_detail.empty() ? "" : " (" + n.gdr_detail + ")");
    } else if (n.gdr_possible) {
      gdr.status = Status::Pass;
    } else if (multi_node && !config.tcp && config.require_gpudirect) {
      gdr.status = Status::Fail;
      gdr.message = fmt::format("GPUDirect RDMA is not possible ({}): NCCL stages every byte between nodes through host "
                                "memory; load nvidia_peermem or use the open kernel modules for dma-buf (set "
                                "fabric.require_gpudirect: false if this is meant)",
                                n.gdr_detail.empty() ? "nothing found" : n.gdr_detail);
    } else {
      gdr.status = Status::Pass;
      gdr.message = "not required here (" + n.gdr_detail + ")";
    }
    out.push_back(std::move(gdr));
  }
  return out;
}

}  // namespace gpuaccept::discover
