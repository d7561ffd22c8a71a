// world-bench: what World's PMIx collectives cost as ranks grow (issue 18, part 5): a barrier
// (a data-collecting fence, as World's barrier is), an allgather of a verdict-sized payload,
// one of a rank's records (every rank's to every rank), and the result gather a phase ends with
// (every rank's records to rank 0 only). Each timed `--repeats` times after one warm-up; rank 0
// prints one line per operation, readable and parseable:
//   world-bench ranks=8 nodes=2 op=result_gather bytes_per_rank=16384 median_ms=3.21 max_ms=4.10
// and checks every allgather's contents (each rank's payload is a function of its rank), so a
// figure is never of a collective that returned the wrong data.
//   srun -N2 -n8 --mpi=pmix world-bench [--repeats 20] [--record-bytes 16384]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "world/world.h"

using namespace gpuaccept;

namespace {

std::string payload(int rank, std::size_t bytes) {
  std::string s(bytes, '\0');
  for (std::size_t i = 0; i < bytes; ++i) s[i] = static_cast<char>('a' + (rank * 31 + static_cast<int>(i)) % 26);
  return s;
}

// Median and max of `repeats` timings of `op`, in ms, after one untimed call.
std::pair<double, double> time_op(World& w, int repeats, const std::function<void()>& op) {
  op();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    w.barrier();  // every rank starts together, so a rank's time is the collective's, not a wait for others
    const auto t0 = std::chrono::steady_clock::now();
    op();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.back()};
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 20;
  std::size_t record_bytes = 16384;
  CLI::App app{"Times World's PMIx collectives (for docs/performance.md)"};
  app.add_option("--repeats", repeats, "timed calls per operation")->check(CLI::PositiveNumber);
  app.add_option("--record-bytes", record_bytes, "bytes each rank contributes to the result gather");
  CLI11_PARSE(app, argc, argv);

  const auto start = std::chrono::steady_clock::now();
  auto world = make_world();
  const double init_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  World& w = *world;
  int wrong = 0;
  const auto gather_checked = [&](std::size_t bytes, bool to_root) {
    const auto all = to_root ? w.gather_string(payload(w.rank(), bytes), 0) : w.allgather_string(payload(w.rank(), bytes));
    if (to_root && w.rank() != 0) {
      if (!all.empty()) ++wrong;  // only the root receives
      return;
    }
    for (int r = 0; r < w.size(); ++r)
      if (all.size() != static_cast<std::size_t>(w.size()) || all[static_cast<std::size_t>(r)] != payload(r, bytes))
        ++wrong;
  };
  struct Op {
    const char* name;
    std::size_t bytes;
    std::function<void()> run;
  };
  const std::vector<Op> ops{
      {"barrier", 0, [&] { w.barrier(); }},
      {"verdict_allgather", 8, [&] { gather_checked(8, false); }},
      {"records_allgather", record_bytes, [&] { gather_checked(record_bytes, false); }},
      {"result_gather", record_bytes, [&] { gather_checked(record_bytes, true); }},  // ResultWriter's: to rank 0
  };
  if (w.rank() == 0)
    std::printf("world-bench ranks=%d nodes=%d op=init bytes_per_rank=0 median_ms=%.2f max_ms=%.2f\n", w.size(),
                w.node_count(), init_ms, init_ms);
  for (const auto& op : ops) {
    const auto [median, max] = time_op(w, repeats, op.run);
    if (w.rank() == 0)
      std::printf("world-bench ranks=%d nodes=%d op=%s bytes_per_rank=%zu median_ms=%.2f max_ms=%.2f\n", w.size(),
                  w.node_count(), op.name, op.bytes, median, max);
  }
  const bool any_wrong = w.any(wrong > 0);
  if (w.rank() == 0 && any_wrong) std::printf("world-bench: FAIL: an allgather returned another rank's data\n");
  return any_wrong ? 1 : 0;
}
