#include "nccl-scaling/bench.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "cuda/timing.h"
#include "nccl-scaling/verify.h"

namespace gpuaccept::nccl_scaling {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

WaitContext with(const WaitContext& base, const std::string& what) {
  WaitContext c = base;
  c.what = base.what + ", " + what;
  return c;
}

}  // namespace

Bench::Bench(RankRuntime& rt, const Options& opts, SweepBuffers& buffers)
    : rt_(rt), opts_(opts), buf_(buffers), marks_(static_cast<std::size_t>(opts.batches) + 1) {}

PlacementResult Bench::measure_placement(const Collective& c, Dtype dtype, const ElemCounts& k, bool in_place,
                                         NcclComm& comm, int rank, int nranks, const IterPlan& plan,
                                         const WaitContext& base) {
  const auto di = info(dtype);
  const std::size_t elt = di.size;
  const cudaStream_t stream = rt_.stream();
  const double timeout = opts_.timeout_s;
  const WaitContext ctx = with(base, in_place ? "in-place" : "out-of-place");

  // nccl-tests' startColl: operation `iter` runs at offset total * (iter % steps) in both
  // buffers, so consecutive operations touch different memory.
  const std::size_t total = std::max(k.send, k.recv) * elt;
  const std::size_t steps = total ? std::max<std::size_t>(1, buf_.bytes() / total) : 1;
  LaunchArgs args;
  args.count = k.param;
  args.dtype = di.nccl;
  args.elt = elt;
  args.root = 0;
  args.rank = rank;
  args.nranks = nranks;
  args.comm = comm.get();
  args.stream = stream;
  auto place = [&](int iter) {
    const std::size_t shift = total * (static_cast<std::size_t>(iter) % steps);
    char* recv = buf_.recv() + shift;
    char* send = buf_.send() + shift;
    args.send = in_place ? recv + k.send_inplace_offset * elt * static_cast<std::size_t>(rank) : send;
    args.recv = in_place ? recv + k.recv_inplace_offset * elt * static_cast<std::size_t>(rank) : recv;
  };
  auto launch = [&](int iter, const WaitContext& w) {
    place(iter);
    rt_.check(c.launch(args), args.comm, w, "NCCL collective launch");
  };

  ExpectArgs expect;
  expect.coll = c.id;
  expect.rank = rank;
  expect.nranks = nranks;
  expect.root = 0;
  expect.count = k.param;
  expect.stride = sum_stride(nranks);
  // In-place broadcast: only the root's input matters, and a non-root's buffer must keep
  // the poison until the root's data overwrites it.
  const bool fill = !(c.id == CollId::Broadcast && in_place && rank != 0);
  char* const input = in_place ? buf_.recv() + k.send_inplace_offset * elt * static_cast<std::size_t>(rank)
                               : buf_.send();
  char* const output = in_place ? buf_.recv() + k.recv_inplace_offset * elt * static_cast<std::size_t>(rank)
                                : buf_.recv();
  if (fill) fill_input(input, k.send, dtype, expect, rank, stream);

  PlacementResult result;
  result.run = true;

  // Warmup, waited for: connections for this size's algorithm and protocol are set up here,
  // not in the timed batches.
  const WaitContext warm_ctx = with(ctx, "warmup");
  {
    auto g = rt_.guard(warm_ctx, timeout);
    for (int i = 0; i < plan.warmup; ++i) launch(i, warm_ctx);
    warm_.record(stream);
  }
  rt_.wait(warm_.get(), {comm.get()}, warm_ctx, timeout);

  // Timed batches back to back. Every batch has its own deadline, counted from the end of
  // the previous one, so a long sweep is never cut short and a hang is caught per batch.
  // (Contexts are built before the first event: nothing but launches between the events.)
  std::vector<WaitContext> batch_ctx;
  for (int b = 0; b < plan.batches; ++b) batch_ctx.push_back(with(ctx, fmt::format("timed batch {}", b + 1)));
  marks_[0].record(stream);
  for (int b = 0; b < plan.batches; ++b) {
    auto g = rt_.guard(batch_ctx[static_cast<std::size_t>(b)], timeout);
    for (int i = 0; i < plan.iters; ++i) launch(b * plan.iters + i, batch_ctx[static_cast<std::size_t>(b)]);
    marks_[static_cast<std::size_t>(b) + 1].record(stream);
  }
  std::vector<double> per_op_us;
  for (int b = 0; b < plan.batches; ++b) {
    const auto i = static_cast<std::size_t>(b);
    rt_.wait(marks_[i + 1].get(), {comm.get()}, batch_ctx[i], timeout);
    per_op_us.push_back(1000.0 * marks_[i + 1].elapsed_ms_since(marks_[i]) / plan.iters);
  }
  result.time_us = median(per_op_us);

  if (opts_.check) {
    const WaitContext check_ctx = with(ctx, "verification");
    poison(buf_.recv(), (in_place ? std::max(k.send, k.recv) : k.recv) * elt, stream);
    if (fill) fill_input(input, k.send, dtype, expect, rank, stream);
    {
      auto g = rt_.guard(check_ctx, timeout);
      launch(0, check_ctx);
    }
    GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(buf_.wrong_counter(), 0, sizeof(unsigned long long), stream));
    // reduce: only the root's output is defined.
    if (c.id != CollId::Reduce || rank == 0) count_wrong(output, k.recv, dtype, expect, buf_.wrong_counter(), stream);
    GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(buf_.wrong_host(), buf_.wrong_counter(), sizeof(unsigned long long),
                                         cudaMemcpyDeviceToHost, stream));
    check_.record(stream);
    rt_.wait(check_.get(), {comm.get()}, check_ctx, timeout);
    result.wrong = static_cast<long long>(*buf_.wrong_host());
  }
  return result;
}

RowResult Bench::measure_row(const Collective& c, Dtype dtype, std::size_t bytes, NcclComm& comm,
                             const std::vector<int>& members, const WaitContext& ctx, const IterPlan& plan) {
  const int nranks = static_cast<int>(members.size());
  const int rank = static_cast<int>(std::find(members.begin(), members.end(), rt_.world().rank()) - members.begin());
  const std::size_t elt = info(dtype).size;
  RowResult r;
  r.counts = counts_for_size(c, bytes, elt, nranks);
  r.size_bytes = r.counts.size_bytes(elt);
  r.plan = plan;
  r.mine[0] = measure_placement(c, dtype, r.counts, false, comm, rank, nranks, r.plan, ctx);
  if (c.has_inplace) r.mine[1] = measure_placement(c, dtype, r.counts, true, comm, rank, nranks, r.plan, ctx);

  // Gather every rank's figures over the same communicator (4 doubles per rank).
  double* mine = buf_.stats_host();
  mine[0] = r.mine[0].time_us;
  mine[1] = static_cast<double>(r.mine[0].wrong);
  mine[2] = r.mine[1].run ? r.mine[1].time_us : kNaN;
  mine[3] = static_cast<double>(r.mine[1].wrong);
  const cudaStream_t stream = rt_.stream();
  const WaitContext gather_ctx = with(ctx, "gathering the ranks' figures");
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(buf_.stats_send(), mine, 4 * sizeof(double), cudaMemcpyHostToDevice, stream));
  {
    auto g = rt_.guard(gather_ctx, opts_.timeout_s);
    rt_.check(ncclAllGather(buf_.stats_send(), buf_.stats_recv(), 4, ncclFloat64, comm.get(), stream), comm.get(),
              gather_ctx, "ncclAllGather");
  }
  double* all = mine + 4;
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(all, buf_.stats_recv(), 4 * sizeof(double) * static_cast<std::size_t>(nranks),
                                       cudaMemcpyDeviceToHost, stream));
  stats_.record(stream);
  rt_.wait(stats_.get(), {comm.get()}, gather_ctx, opts_.timeout_s);
  r.ranks.resize(static_cast<std::size_t>(nranks));
  for (int q = 0; q < nranks; ++q) {
    const double* s = all + 4 * q;
    auto& f = r.ranks[static_cast<std::size_t>(q)];
    f.time_us[0] = s[0];
    f.wrong[0] = static_cast<long long>(s[1]);
    f.time_us[1] = s[2];
    f.wrong[1] = static_cast<long long>(s[3]);
  }
  return r;
}

RowFigures row_figures(const Collective& c, const RowResult& r, int placement, int nranks) {
  RowFigures f;
  f.run = r.mine[placement].run;
  if (!f.run) return f;
  double sum = 0;
  int n = 0;
  bool checked = false;
  long long wrong = 0;
  for (std::size_t q = 0; q < r.ranks.size(); ++q) {
    const auto& rk = r.ranks[q];
    if (std::isfinite(rk.time_us[placement])) {
      sum += rk.time_us[placement];
      ++n;
    }
    if (rk.wrong[placement] >= 0) {
      checked = true;
      wrong += rk.wrong[placement];
      if (rk.wrong[placement] > 0) f.wrong_by_rank.emplace_back(static_cast<int>(q), rk.wrong[placement]);
    }
  }
  // nccl-tests' default (-a 1): the mean of the ranks' times, then the bandwidths from it.
  f.time_us = n ? sum / n : kNaN;
  f.algbw = f.time_us > 0 ? static_cast<double>(r.size_bytes) / (f.time_us * 1e-6) / 1e9 : 0.0;
  f.busbw = f.algbw * c.bus_factor(nranks);
  f.wrong = checked ? wrong : -1;
  return f;
}

}  // namespace gpuaccept::nccl_scaling
