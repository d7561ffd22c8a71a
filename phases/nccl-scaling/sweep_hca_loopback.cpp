// Each node's GPUs all-reduce through the node's own HCAs, NCCL's P2P and SHM transports off
// (hca_loopback.h says why and how). One step for every rank: the nodes with at least two GPUs
// and an active RDMA port run at once; rank 0 records one hca_loopback per node.
#include <chrono>

#include <fmt/format.h>
#include <nccl.h>

#include "common/log.h"
#include "nccl-scaling/hca_loopback.h"
#include "nccl-scaling/sweep_internal.h"

namespace gpuaccept::nccl_scaling {

void Sweep::run_hca_loopback() {
  const ScalePlan plan = plan_scale(Scale::HcaLoopback, topo_, opts_.scales);
  if (!plan.runs()) return;  // SKIP recorded at start
  const std::string sname(scale_name(Scale::HcaLoopback));
  // A node runs when its GPUs have an RDMA port to leave through (the hidden
  // --debug-loopback-without-rdma runs it over whatever NCCL finds, for the GPU machine).
  auto has_rdma = [&](const Group& g) {
    for (const int r : g.members)
      if (infos_.at(static_cast<std::size_t>(r)).links.ib) return true;
    return opts_.loopback_without_rdma;
  };
  const Group* mine = group_of(plan.groups, rank_);
  const bool runs = mine && has_rdma(*mine);
  begin_step({"hca_loopback", mine ? mine->members : everyone(), -1});

  // The node's NCCL id, made by its first rank, to every rank (World, not NCCL: the children
  // make their own communicator).
  std::string id_hex;
  if (runs && mine->members.front() == rank_) {
    ncclUniqueId id;
    rt_->check(ncclGetUniqueId(&id), nullptr, current_, "ncclGetUniqueId");
    id_hex = to_hex(&id, sizeof id);
  }
  const auto ids = world_.allgather_string(id_hex);
  LoopbackAnswer answer;
  if (runs) {
    LoopbackArgs a;
    a.nccl_id_hex = ids.at(static_cast<std::size_t>(mine->members.front()));
    a.rank = static_cast<int>(std::find(mine->members.begin(), mine->members.end(), rank_) - mine->members.begin());
    a.nranks = static_cast<int>(mine->members.size());
    a.device = infos_.at(static_cast<std::size_t>(rank_)).device;
    a.bytes = pair_bytes_;
    a.nccl_log = nccl_log_.observing() ? nccl_log_.path() + ".loopback" : "";
    answer = run_loopback_child(a, std::chrono::milliseconds(static_cast<long long>(1000 * opts_.timeout_s)));
    if (!answer.error.empty()) log_error("hca_loopback: {}", answer.error);
  }
  const auto answers = world_.allgather_string(runs ? loopback_answer_text(answer) : "");
  if (rank_ == 0) {
    for (const auto& g : plan.groups) {
      if (!has_rdma(g)) {
        log_rank0("SKIP  hca_loopback on {}: no active RDMA port", g.node);
        job_record("hca_loopback", Status::Skip,
                   "no active RDMA port on this node: nothing leaves it through an HCA (fabric_ports says whether "
                   "one is missing)",
                   {{"scale", sname}}, g.node);
        continue;
      }
      std::vector<LoopbackAnswer> node_answers;
      for (const int r : g.members) node_answers.push_back(parse_loopback_answer(answers.at(static_cast<std::size_t>(r))));
      const LineRate lr = loopback_line_rate(g.members, infos_);
      Record r = hca_loopback_record(g.node, node_answers, pair_bytes_, lr);
      r.params["scale"] = sname;
      log_rank0("{:<5} hca_loopback on {}: {}", to_string(r.status), g.node, r.message);
      add(std::move(r));
    }
    for (const auto& [host, why] : plan.skipped_nodes)
      job_record("hca_loopback", Status::Skip, why + ": no second GPU to all-reduce with", {{"scale", sname}}, host);
  }
  end_step(true);
}

}  // namespace gpuaccept::nccl_scaling
