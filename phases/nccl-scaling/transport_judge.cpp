#include "nccl-scaling/transport_judge.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpuaccept::nccl_scaling {

namespace {

std::string hosts_text(const std::set<std::string>& hosts) { return fmt::format("{}", fmt::join(hosts, ",")); }

std::string expected_text(const LineRate& lr) {
  if (lr.gbps <= 0) return "";
  return fmt::format("; expected: {} at {:.0f} Gb/s ({:.1f} GB/s) on {} ({})", lr.fabric == "none" ? "RDMA" : lr.fabric,
                     lr.gbps, lr.gbps / 8, lr.node, lr.ports);
}

}  // namespace

Record judge_nccl_transport(const TransportEvidence& e, const std::vector<RankInfo>& infos, const FabricConfig& fabric,
                            const LineRate& expected) {
  Record r;
  r.rank = kJobLevel;
  r.test = "nccl_transport";
  r.params = {{"scale", e.scale}};
  if (!e.not_observed.empty()) {
    r.status = Status::Skip;
    r.message = "NCCL's transports not observed: " + e.not_observed;
    return r;
  }
  std::set<std::string> observed, socket_hosts, socket_hosts_with_rdma, no_gdr_hosts;
  for (const int w : e.members) {
    const auto& kinds = e.kinds.at(static_cast<std::size_t>(w));
    const RankInfo& info = infos.at(static_cast<std::size_t>(w));
    observed.insert(kinds.begin(), kinds.end());
    if (kinds.count("NET/Socket")) {
      socket_hosts.insert(info.host);
      if (info.links.ib) socket_hosts_with_rdma.insert(info.host);
    }
    if (kinds.count("NET/IB") && info.links.gdr_possible) no_gdr_hosts.insert(info.host);
  }
  r.params["observed"] = fmt::format("{}", fmt::join(observed, "+"));
  if (!socket_hosts.empty()) r.params["hosts_socket"] = hosts_text(socket_hosts);
  bool between_nodes = false;
  for (const auto& k : observed) between_nodes = between_nodes || k.starts_with("NET/");
  if (!between_nodes) {
    r.status = Status::Skip;
    r.message = fmt::format("NCCL's log shows no transport between nodes at this scale (seen: {})",
                            observed.empty() ? "nothing" : r.params["observed"]);
    return r;
  }
  std::vector<std::string> faults;
  if (!socket_hosts_with_rdma.empty())
    faults.push_back(fmt::format("inter-node traffic went over NET/Socket on {} although they have active RDMA ports: "
                                 "NCCL fell back to TCP (NCCL_IB_DISABLE, NCCL_NET, NCCL_IB_HCA, libibverbs or the "
                                 "rdma-core providers missing in the job's environment, the subnet manager)",
                                 hosts_text(socket_hosts_with_rdma)));
  std::set<std::string> socket_hosts_without_rdma;
  for (const auto& h : socket_hosts)
    if (!socket_hosts_with_rdma.count(h)) socket_hosts_without_rdma.insert(h);
  if (!socket_hosts_without_rdma.empty() && !fabric.tcp)
    faults.push_back(fmt::format("inter-node traffic went over NET/Socket (TCP) on {}, which have no RDMA port, and "
                                 "fabric.transport is not tcp",
                                 hosts_text(socket_hosts_without_rdma)));
  if (!no_gdr_hosts.empty() && fabric.require_gpudirect)
    faults.push_back(fmt::format("NET/IB without GPUDirect RDMA on {} although it is possible there: every byte is "
                                 "staged through host memory (NCCL_NET_GDR_LEVEL, NCCL_NET_GDR_READ, PCIe ACS, IOMMU)",
                                 hosts_text(no_gdr_hosts)));
  r.status = faults.empty() ? Status::Pass : Status::Fail;
  r.message = faults.empty() ? fmt::format("NCCL used {} between nodes{}", r.params["observed"], expected_text(expected))
                             : fmt::format("{}{}", fmt::join(faults, "; "), expected_text(expected));
  return r;
}

}  // namespace gpuaccept::nccl_scaling
