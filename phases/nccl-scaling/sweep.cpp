#include "nccl-scaling/sweep.h"

#include <algorithm>
#include <cstdlib>

#include <unistd.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/debug_fault.h"
#include "common/json_text.h"
#include "common/log.h"
#include "cuda/cuda_check.h"
#include "nccl-scaling/scale_budget.h"
#include "nccl-scaling/sweep_internal.h"
#include "nccl-scaling/transport_judge.h"
#include "slurm/slurm_env.h"

namespace gpuaccept::nccl_scaling {

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// NCCL's log of this rank: node-local (TMPDIR, else /tmp), one file per job step and rank;
// read by the phase and removed at its end (nccl_log.h).
std::string nccl_log_path(const World& world) {
  const SlurmEnv s = SlurmEnv::from_process();
  const std::string dir = env_or_empty("TMPDIR").empty() ? "/tmp" : env_or_empty("TMPDIR");
  return fmt::format("{}/gpuaccept-nccl-scaling-{}.{}-rank{}-{}.log", dir, s.job_id.empty() ? "nojob" : s.job_id,
                     s.step_id.empty() ? "0" : s.step_id, world.rank(), getpid());
}

}  // namespace

void run_nccl_scaling(PhaseContext& ctx, const Options& options) { Sweep(ctx, options).run(); }

Sweep::Sweep(PhaseContext& ctx, Options options)
    : ctx_(ctx),
      opts_(std::move(options)),
      world_(ctx.world),
      rank_(ctx.world.rank()),
      fabric_(read_fabric_config(ctx.config)),
      nccl_log_(nccl_log_path(ctx.world)) {
  topo_.rank_node = world_.rank_nodes();
  topo_.node_names = world_.node_names();
  net_env_.nccl_net = env_or_empty("NCCL_NET");
  net_env_.ib_disable = env_or_empty("NCCL_IB_DISABLE");
  net_env_.p2p_disable = env_or_empty("NCCL_P2P_DISABLE");
}

std::vector<int> Sweep::everyone() const {
  std::vector<int> all(static_cast<std::size_t>(world_.size()));
  for (int r = 0; r < world_.size(); ++r) all[static_cast<std::size_t>(r)] = r;
  return all;
}

// ---------------------------------------------------------------- records

void Sweep::add(Record r) {
  std::lock_guard lock(results_mu_);
  ctx_.results.add(std::move(r));
  dirty_ = true;
}

void Sweep::job_record(const std::string& test, Status status, const std::string& message, Params params,
                       const std::string& node) {
  Record r;
  r.rank = kJobLevel;
  r.node = node;
  r.test = test;
  r.status = status;
  r.message = message;
  r.params = std::move(params);
  add(std::move(r));
}

// Rank 0: a SKIP for every collective (or the pair test) of every requested scale, or of
// the one scale in `extra["scale"]`.
void Sweep::record_skips(const std::string& reason, Params extra) {
  if (rank_ != 0) return;
  for (Scale s : opts_.scales) {
    const std::string name(scale_name(s));
    if (extra.count("scale") && extra.at("scale") != name) continue;
    Params p = extra;
    p["scale"] = name;
    if (is_pair_scale(s)) {
      job_record("pair_busbw", Status::Skip, reason, p);
    } else if (s == Scale::HcaLoopback) {
      job_record("hca_loopback", Status::Skip, reason, p);
    } else {
      for (const auto& c : opts_.collectives) job_record(c, Status::Skip, reason, p);
    }
  }
}

void Sweep::checkpoint_if_due(bool force) {
  if (!dirty_) return;
  const auto now = WatchClock::now();
  if (!force && opts_.checkpoint_interval_s > 0 &&
      now - last_checkpoint_ < WatchDuration(opts_.checkpoint_interval_s))
    return;
  std::lock_guard lock(results_mu_);
  try {
    ctx_.results.checkpoint();
  } catch (const std::exception& e) {
    log_error("results checkpoint failed: {}", e.what());  // the final gather still has them
  }
  dirty_ = false;
  last_checkpoint_ = now;
}

// ---------------------------------------------------------------- run

void Sweep::run() {
  if (!check_devices()) return;
  for (Scale s : opts_.scales) {
    std::string why;
    if (s == Scale::GpuPair) why = plan_gpu_pairs(topo_, gpu_index_of_rank()).skip_reason;
    else if (s == Scale::NodePair) why = plan_node_pairs(topo_, opts_.pair_mode).skip_reason;
    else if (const ScalePlan p = plan_scale(s, topo_, opts_.scales); !p.runs()) why = p.skip_reason;
    if (why.empty()) continue;
    log_rank0("scale {}: SKIP: {}", scale_name(s), why);
    record_skips(why, {{"scale", std::string(scale_name(s))}});
  }
  plan_steps();
  publish_environment();
  if (steps_.empty()) return;
  // Every rank's part file exists from the start (its nccl_env document), so a rank that
  // dies before it measured anything still left what it ran with.
  dirty_ = true;
  checkpoint_if_due(true);

  try {
    RankRuntime::Setup setup;
    setup.device = infos_[static_cast<std::size_t>(rank_)].device;
    setup.arrivals_dir = ctx_.results.run_dir() / (ctx_.results.phase() + ".arrivals");
    setup.create_abort_file = rank_ == 0;
    setup.last_resort = [this](const std::string& why) { last_resort(why); };
    const RuntimeOptions deadlines{.timeout_s = opts_.timeout_s, .heartbeat_s = opts_.heartbeat_s,
                                   .nonblocking = opts_.nonblocking};
    rt_ = std::make_unique<RankRuntime>(world_, deadlines, std::move(setup));
    buffers_ = std::make_unique<SweepBuffers>(buffer_bytes_, world_.size(), rt_->stream());
    bench_ = std::make_unique<Bench>(*rt_, opts_, *buffers_);
    sync_done_ = std::make_unique<CudaEvent>();
    progress_ = std::make_unique<Progress>(static_cast<int>(steps_.size()));
    last_checkpoint_ = WatchClock::now();
    for (Scale s : opts_.scales) {
      if (is_pair_scale(s)) run_pair_scale(s);
      else if (s == Scale::HcaLoopback) run_hca_loopback();
      else run_collective_scale(s);
    }
  } catch (const Fault& f) {
    handle_fault(f);
    return;
  } catch (const std::exception& e) {
    // A failed CUDA/NCCL call (CallError) or anything else: the same way out, so the other
    // ranks are told and nothing waits on a communicator this rank left mid-collective.
    const bool overrun = rt_ && rt_->watchdog().overrun();
    handle_fault(Fault(overrun ? Fault::Kind::Timeout : Fault::Kind::CallFailed, current_, e.what()));
    return;
  }

  checkpoint_if_due(true);
  bench_.reset();
  sync_done_.reset();
  rt_->shutdown();  // communicators destroyed under the watchdog, then its thread stops
  const auto arrivals = rt_->board().dir();
  rt_.reset();
  world_.barrier();
  if (rank_ == 0) ArrivalBoard(arrivals, 0, "").remove();  // nobody writes heartbeats any more
  judge_transports();
  log_rank0("nccl-scaling: {} steps done in {:.1f} s", steps_.size(), progress_->elapsed_s());
}

// ---------------------------------------------------------------- steps

void Sweep::begin_step(const WaitContext& ctx) {
  inject_debug_fault(opts_.debug_fault, rank_, step_, describe_progress(2 * step_));
  current_ = ctx;
  current_.target = 2 * step_;
  step_started_ = WatchClock::now();
  rt_->arrive(2 * step_);
}

void Sweep::end_step(bool sync) {
  rt_->arrive(2 * step_ + 1);
  if (sync) world_sync();
  const double took = std::chrono::duration<double>(WatchClock::now() - step_started_).count();
  progress_->step(steps_[static_cast<std::size_t>(step_)].name);
  last_step_s_ = took;
  checkpoint_if_due(false);
  ++step_;
}

void Sweep::world_sync() {
  const WaitContext ctx{fmt::format("the end-of-step sync of {}", describe_progress(2 * step_)), everyone(),
                        2 * step_ + 1};
  current_ = ctx;
  NcclComm& w = rt_->world_comm();
  {
    auto g = rt_->guard(ctx, opts_.timeout_s);
    rt_->check(ncclAllReduce(buffers_->sync_value(), buffers_->sync_value(), 1, ncclFloat32, ncclSum, w.get(), rt_->stream()),
               w.get(), ctx, "ncclAllReduce");
    sync_done_->record(rt_->stream());
  }
  // A rank idle in this step (inter_node's other GPUs) waits here while the others measure:
  // allow for a step as long as three times the last one.
  rt_->wait(sync_done_->get(), {w.get()}, ctx, opts_.timeout_s + 3 * last_step_s_);
}

const double* Sweep::world_gather(const double (&mine)[4], const WaitContext& ctx) {
  current_ = ctx;
  NcclComm& w = rt_->world_comm();
  const cudaStream_t stream = rt_->stream();
  double* host = buffers_->stats_host();
  std::copy(std::begin(mine), std::end(mine), host);
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(buffers_->stats_send(), host, 4 * sizeof(double), cudaMemcpyHostToDevice, stream));
  {
    auto g = rt_->guard(ctx, opts_.timeout_s);
    rt_->check(ncclAllGather(buffers_->stats_send(), buffers_->stats_recv(), 4, ncclFloat64, w.get(), stream), w.get(), ctx,
               "ncclAllGather");
  }
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(host + 4, buffers_->stats_recv(), 4 * sizeof(double) * static_cast<std::size_t>(world_.size()),
                                       cudaMemcpyDeviceToHost, stream));
  sync_done_->record(stream);
  rt_->wait(sync_done_->get(), {w.get()}, ctx, opts_.timeout_s + 3 * last_step_s_);
  return host + 4;
}

std::vector<int> Sweep::gpu_index_of_rank() const {
  std::vector<int> out;
  for (const auto& i : infos_) out.push_back(i.node_index >= 0 ? i.node_index : i.links.nvml_index);
  return out;
}

void Sweep::run_collective_scale(Scale scale) {
  const ScalePlan plan = plan_scale(scale, topo_, opts_.scales);
  if (!plan.runs()) return;  // SKIP recorded at start
  const std::string sname(scale_name(scale));
  // intra_node: a node with one rank sits the scale out; that rank says so for its node.
  for (const auto& [host, why] : plan.skipped_nodes)
    if (host == world_.hostname() && world_.local_rank() == 0)
      for (const auto& c : opts_.collectives) job_record(c, Status::Skip, why, {{"scale", sname}}, host);

  const Group* mine = group_of(plan.groups, rank_);
  const bool leader = mine && mine->members.front() == rank_;
  const std::string transport = mine ? transport_of(mine->members) : "";
  const std::optional<LineRate> line_rate = mine ? line_rate_of_group(*mine) : std::nullopt;
  const int n = mine ? static_cast<int>(mine->members.size()) : 0;
  ScaleBudget budget(opts_.scale_budget_s, static_cast<int>(opts_.collectives.size() * opts_.dtypes.size()));
  // One group of every rank (`all`; intra_node on one node; inter_node with one GPU per
  // node): the world communicator itself, and its figures' gather is the step's sync.
  const bool whole_world = plan.groups.size() == 1 && plan.groups[0].members.size() == static_cast<std::size_t>(world_.size());
  std::shared_ptr<NcclComm> split;
  NcclComm* comm = nullptr;
  bool first = true;
  if (leader)
    log_info("scale {}{}: {} ranks, transport {}{}", sname, mine->node.empty() ? "" : " on " + mine->node, n, transport,
             line_rate ? fmt::format(", line rate {:.0f} Gb/s ({}: {} on {})", line_rate->gbps, line_rate->source,
                                     line_rate->ports, line_rate->node)
                       : "");

  for (const auto& name : opts_.collectives) {
    const Collective& c = *find_collective(name);
    for (Dtype dtype : opts_.dtypes) {
      const auto di = info(dtype);
      if (leader && !c.has_inplace)
        job_record(std::string(c.name), Status::Skip,
                   fmt::format("in-place {} is not defined (nccl-tests times it with one buffer for both sides and "
                               "does not check it)", c.name),
                   {{"scale", sname}, {"dtype", std::string(di.name)}, {"inplace", "1"}, {"ranks", std::to_string(n)},
                    {"transport", transport}},
                   mine->node);
      std::vector<TableRow> table;
      budget.begin_sweep();
      for (std::size_t size : sizes_) {
        const std::string what =
            fmt::format("{} {} {}, scale {}{}", c.name, di.name, format_bytes(static_cast<double>(size)), sname,
                        mine && !mine->node.empty() ? " (" + mine->node + ")" : "");
        begin_step({what, mine ? mine->members : everyone(), -1});
        if (first) {
          first = false;
          if (whole_world) {
            comm = &rt_->world_comm();
          } else {
            const WaitContext sctx{fmt::format("ncclCommSplit for scale {}", sname), everyone(), 2 * step_};
            split = rt_->split(rt_->world_comm(), mine ? mine->color : NCCL_SPLIT_NOCOLOR, rank_, sctx);
            comm = split.get();
            current_ = {what, mine ? mine->members : everyone(), 2 * step_};
          }
        }
        bool measured = false;
        if (mine && comm && counts_for_size(c, size, di.size, n).param > 0) {
          const int placements = c.has_inplace ? 2 : 1;
          const ScaleBudget::Decision d = budget.before(size, iter_plan(opts_, size), placements);
          if (d.kind == ScaleBudget::Decision::Kind::Skip) {
            if (leader) record_budget_skip(c, dtype, scale, *mine, transport, size, d.reason);
          } else {
            const RowResult r = bench_->measure_row(c, dtype, size, *comm, mine->members, current_, d.plan);
            measured = true;
            double slowest_us = 0;
            for (int p = 0; p < placements; ++p) slowest_us = std::max(slowest_us, row_figures(c, r, p, n).time_us);
            budget.after(size, d.plan, placements, slowest_us);
            if (leader) {
              record_row(c, dtype, scale, *mine, transport, line_rate ? &*line_rate : nullptr,
                         d.kind == ScaleBudget::Decision::Kind::MeasureReduced, r, table);
              if (d.kind == ScaleBudget::Decision::Kind::MeasureReduced)
                log_info("{} {} {} at scale {}: {}", c.name, di.name, format_bytes(static_cast<double>(size)), sname, d.reason);
            }
          }
        }
        // A size not run (a count rounded down to 0, or left out by the budget): then the
        // world sync is this step's only one.
        end_step(!whole_world || !measured);
      }
      if (leader && !table.empty()) {
        log_info("{}", format_table(fmt::format("{} {} | scale {}{} | {} ranks | transport {} | NCCL {} {} | warmup {}, "
                                                "{} x {} iters{} | time: mean over ranks of the median batch",
                                                c.name, di.name, sname, mine->node.empty() ? "" : " " + mine->node, n,
                                                transport, nccl_version(), opts_.nonblocking ? "nonblocking" : "blocking",
                                                opts_.warmup_iters, opts_.batches, opts_.iters,
                                                opts_.profile == Profile::Quick ? " (fewer above 256 MiB)" : ""),
                                    table));
        checkpoint_if_due(true);
      }
    }
  }
  // Everyone passed the last step's sync (2 * step_ - 1) before destroying.
  if (split) rt_->release(split, {fmt::format("ncclCommDestroy for scale {}", sname), everyone(), 2 * step_ - 1});
}

std::optional<LineRate> Sweep::line_rate_of_group(const Group& group) const {
  std::vector<int> nodes;
  for (const int r : group.members) nodes.push_back(topo_.rank_node.at(static_cast<std::size_t>(r)));
  std::sort(nodes.begin(), nodes.end());
  if (std::unique(nodes.begin(), nodes.end()) - nodes.begin() < 2) return std::nullopt;  // within one node
  return line_rate_of(group.members, topo_, infos_, fabric_.tcp, fabric_.reference_port_gbps);
}

void Sweep::record_budget_skip(const Collective& c, Dtype dtype, Scale scale, const Group& group,
                               const std::string& transport, std::size_t size, const std::string& reason) {
  const auto di = info(dtype);
  const std::string key = fmt::format("{} {} {}", c.name, di.name, scale_name(scale));
  if (budget_logged_.insert(key).second) log_info("{} {} at scale {}: {}", c.name, di.name, scale_name(scale), reason);
  job_record(std::string(c.name), Status::Skip, reason,
             {{"bytes", std::to_string(size)}, {"dtype", std::string(di.name)}, {"scale", std::string(scale_name(scale))},
              {"ranks", std::to_string(group.members.size())}, {"transport", transport}, {"budget", "exceeded"}},
             group.node);
}

void Sweep::record_row(const Collective& c, Dtype dtype, Scale scale, const Group& group, const std::string& transport,
                       const LineRate* line_rate, bool budget_reduced, const RowResult& r,
                       std::vector<TableRow>& table) {
  const auto di = info(dtype);
  const int n = static_cast<int>(group.members.size());
  TableRow row;
  row.size_bytes = r.size_bytes;
  row.count = r.counts.param;
  row.type = std::string(di.table_name);
  row.redop = std::string(c.redop);
  row.root = c.rooted ? 0 : -1;
  for (int p = 0; p < 2; ++p) {
    const RowFigures f = row_figures(c, r, p, n);
    PlacementFigures& pf = p == 0 ? row.out_of_place : row.in_place;
    pf.run = f.run;
    if (!f.run) continue;
    pf.time_us = f.time_us;
    pf.algbw = f.algbw;
    pf.busbw = f.busbw;
    pf.wrong = f.wrong;
    Params params = {{"bytes", std::to_string(r.size_bytes)}, {"count", std::to_string(r.counts.param)},
                     {"dtype", std::string(di.name)},        {"inplace", p ? "1" : "0"},
                     {"scale", std::string(scale_name(scale))}, {"ranks", std::to_string(n)},
                     {"transport", transport}};
    if (budget_reduced) params["budget"] = "reduced";  // one timed operation (scale_budget.h)
    if (line_rate) {  // across nodes: what the report's line-rate rules judge against (docs/fabric.md)
      params["line_rate_gbps"] = fmt::format("{:g}", line_rate->gbps);
      params["line_rate_source"] = line_rate->source;
      params["fabric"] = line_rate->fabric;
    }
    Status status = Status::Pass;
    std::string message;
    if (f.wrong > 0) {
      std::vector<std::string> where;
      for (const auto& [q, count] : f.wrong_by_rank) {
        const int w = group.members[static_cast<std::size_t>(q)];
        where.push_back(fmt::format("rank {} ({} GPU {}): {}", w, infos_[static_cast<std::size_t>(w)].host,
                                    infos_[static_cast<std::size_t>(w)].device, count));
      }
      status = Status::Fail;
      message = fmt::format("{} wrong elements in the result: {}", f.wrong, fmt::join(where, ", "));
      log_error("{} {} {} {}: {}", c.name, di.name, format_bytes(static_cast<double>(r.size_bytes)),
                p ? "in-place" : "out-of-place", message);
    } else if (f.wrong < 0) {
      message = "not verified (--check 0)";
    }
    const std::tuple<const char*, double, const char*> metrics[] = {
        {"time", f.time_us, "us"}, {"algbw", f.algbw, "GB/s"}, {"busbw", f.busbw, "GB/s"}};
    for (const auto& [metric, value, unit] : metrics) {
      Record rec;
      rec.rank = kJobLevel;
      rec.node = group.node;
      rec.test = std::string(c.name);
      rec.metric = metric;
      rec.value = value;
      rec.unit = unit;
      rec.params = params;
      rec.status = status;
      rec.message = message;
      add(std::move(rec));
    }
  }
  table.push_back(std::move(row));
}

}  // namespace gpuaccept::nccl_scaling

namespace gpuaccept::nccl_scaling {

using nlohmann::json;

// ---------------------------------------------------------------- transports NCCL used

void Sweep::judge_transports() {
  const ObservedTransports mine = nccl_log_.read_new();
  for (const auto& w : mine.warnings) log_error("NCCL: {}", w);  // NCCL's own file took them from the job log
  const json doc = {{"observed", mine.kinds},
                    {"net_devices", mine.net_devices},
                    {"not_observed", nccl_log_.why_not()},
                    {"log", nccl_log_.path()}};
  ctx_.results.set_document("nccl_transports", json_text(doc));
  const auto all = world_.allgather_string(json_text(doc));
  if (rank_ != 0) return;

  std::vector<std::set<std::string>> kinds(all.size());
  std::string not_observed;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const json d = json::parse(all[r], nullptr, false);
    if (d.is_discarded()) continue;
    kinds[r] = d.value("observed", std::set<std::string>{});
    if (not_observed.empty()) not_observed = d.value("not_observed", "");
  }
  for (const Scale s : {Scale::InterNode, Scale::All}) {
    if (std::find(opts_.scales.begin(), opts_.scales.end(), s) == opts_.scales.end()) continue;
    const ScalePlan plan = plan_scale(s, topo_, opts_.scales);
    if (!plan.runs()) continue;
    const auto line_rate = line_rate_of_group(plan.groups.front());
    if (!line_rate) continue;  // within one node: nothing crosses the fabric
    // Every group's ranks (inter_node has one group per local rank): a GPU whose NCCL fell
    // back to sockets is named whichever group it was in.
    std::vector<int> members;
    for (const Group& g : plan.groups) members.insert(members.end(), g.members.begin(), g.members.end());
    TransportEvidence e{std::string(scale_name(s)), members, kinds, not_observed};
    Record r = judge_nccl_transport(e, infos_, fabric_, *line_rate);
    log_rank0("{:<5} nccl_transport at {}: {}", to_string(r.status), scale_name(s), r.message);
    add(std::move(r));
  }
}

}  // namespace gpuaccept::nccl_scaling
