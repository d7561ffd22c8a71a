// Pairwise isolation: which node pair or GPU pair is slow. Each round of the round-robin
// schedule is one step: split the world communicator into the round's pairs (every other
// rank passes NCCL_SPLIT_NOCOLOR), measure one all_reduce size on each pair at once (no
// node or GPU is in two pairs of a round), gather the pairs' figures to rank 0 over the
// world communicator, destroy the pairs' communicators. Rank 0 judges all pairs of the
// scale against their median at the end (pairs.h) and prints the matrix.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "common/log.h"
#include "nccl-scaling/sweep_internal.h"

namespace gpuaccept::nccl_scaling {

void Sweep::run_pair_scale(Scale scale) {
  const PairPlan plan =
      scale == Scale::GpuPair ? plan_gpu_pairs(topo_, gpu_index_of_rank()) : plan_node_pairs(topo_, opts_.pair_mode);
  if (!plan.runs()) return;  // SKIP recorded at start
  const std::string sname(scale_name(scale));
  pending_scale_ = scale;
  pending_pairs_.clear();
  const std::size_t rounds = plan.rounds.size();
  log_rank0("scale {}: {} rounds of all_reduce float {} per pair", sname, rounds,
            format_bytes(static_cast<double>(pair_bytes_)));

  for (std::size_t r = 0; r < rounds; ++r) {
    const auto& round = plan.rounds[r];
    const Group* mine = group_of(round, rank_);
    const std::string what =
        mine ? fmt::format("{} round {}/{}: {}{} - {}", sname, r + 1, rounds, mine->node.empty() ? "" : mine->node + " GPU ",
                           mine->a, mine->b)
             : fmt::format("{} round {}/{} (not in a pair)", sname, r + 1, rounds);
    begin_step({what, mine ? mine->members : everyone(), -1});
    auto comm = rt_->split(rt_->world_comm(), mine ? mine->color : NCCL_SPLIT_NOCOLOR, rank_,
                           {fmt::format("ncclCommSplit for {} round {}", sname, r + 1), everyone(), 2 * step_});
    current_ = {what, mine ? mine->members : everyone(), 2 * step_};

    // busbw, wrong, measured, time: from the pair's leader; NaN elsewhere.
    double figures[4] = {std::numeric_limits<double>::quiet_NaN(), 0, 0, 0};
    if (mine && comm) {
      const RowResult res =
          bench_->measure_row(kAllReduce, Dtype::Float, pair_bytes_, *comm, mine->members, current_, iter_plan(opts_, pair_bytes_));
      if (mine->members.front() == rank_) {
        const RowFigures f = row_figures(kAllReduce, res, 0, static_cast<int>(mine->members.size()));
        figures[0] = f.busbw;
        figures[1] = static_cast<double>(std::max<long long>(f.wrong, 0));
        figures[2] = 1;
        figures[3] = f.time_us;
      }
    }
    rt_->arrive(2 * step_ + 1);
    const double* all =
        world_gather(figures, {fmt::format("gathering the results of {} round {}", sname, r + 1), everyone(), 2 * step_ + 1});
    if (rank_ == 0) {
      for (const auto& g : round) {
        const double* f = all + 4 * g.members.front();
        PairResult p;
        p.node = g.node;
        p.a = g.a;
        p.b = g.b;
        p.ranks = static_cast<int>(g.members.size());
        p.transport = transport_of(g.members);
        p.measured = f[2] == 1;
        p.busbw = f[0];
        p.wrong = static_cast<long long>(f[1]);
        if (!p.measured) p.error = "its ranks reported no figure";
        pending_pairs_.push_back(std::move(p));
      }
    }
    rt_->release(comm, {fmt::format("ncclCommDestroy for {} round {}", sname, r + 1), everyone(), 2 * step_ + 1});
    end_step(false);  // the gather was the step's sync
  }
  judge_pending_pairs();
  checkpoint_if_due(true);
}

void Sweep::judge_pending_pairs() {
  if (rank_ != 0 || pending_pairs_.empty()) return;
  const std::string sname(scale_name(pending_scale_));
  double median = 0;
  const auto verdicts = judge_pairs(pending_pairs_, opts_.pair_outlier_pct, &median);
  for (std::size_t i = 0; i < pending_pairs_.size(); ++i) {
    const auto& p = pending_pairs_[i];
    Record rec;
    rec.rank = kJobLevel;
    rec.node = p.node;
    rec.test = "pair_busbw";
    rec.metric = "busbw";
    rec.value = p.measured ? p.busbw : std::numeric_limits<double>::quiet_NaN();
    rec.unit = "GB/s";
    rec.params = {{"scale", sname},
                  {"a", p.a},
                  {"b", p.b},
                  {"bytes", std::to_string(pair_bytes_)},
                  {"dtype", "float"},
                  {"ranks", std::to_string(p.ranks)},
                  {"transport", p.transport}};
    rec.status = verdicts[i].status;
    rec.message = verdicts[i].message;
    if (rec.status == Status::Fail) log_error("{} FAIL: {}", sname, rec.message);
    add(std::move(rec));
  }
  // The matrix: one for node pairs, one per node for GPU pairs.
  std::vector<std::string> nodes;
  for (const auto& p : pending_pairs_)
    if (std::find(nodes.begin(), nodes.end(), p.node) == nodes.end()) nodes.push_back(p.node);
  for (const auto& node : nodes) {
    std::vector<PairResult> results;
    std::vector<PairVerdict> v;
    std::vector<std::string> labels;
    for (std::size_t i = 0; i < pending_pairs_.size(); ++i) {
      if (pending_pairs_[i].node != node) continue;
      results.push_back(pending_pairs_[i]);
      v.push_back(verdicts[i]);
      for (const auto* end : {&pending_pairs_[i].a, &pending_pairs_[i].b})
        if (std::find(labels.begin(), labels.end(), *end) == labels.end()) labels.push_back(*end);
    }
    if (pending_scale_ == Scale::NodePair) {
      labels = topo_.node_names;  // in node order, every node
    } else {
      std::sort(labels.begin(), labels.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b;  // numeric order of GPU indices
      });
    }
    log_rank0("{}{}: all_reduce float {} busbw per pair, median {:.1f} GB/s, limit -{:.0f}%:\n{}", sname,
              node.empty() ? "" : " on " + node, format_bytes(static_cast<double>(pair_bytes_)), median,
              opts_.pair_outlier_pct, format_pair_matrix(labels, results, v));
  }
  pending_pairs_.clear();
}

}  // namespace gpuaccept::nccl_scaling
