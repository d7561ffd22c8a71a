// reduce_scatter: rank r ends with block r of the sum. nccl-tests reduce_scatter.cu:
// count per rank = (count / n) rounded down to 16-byte blocks; size = the whole input
// (n blocks); busbw = algbw * (n-1)/n. In place: the output is rank r's block of the input.
#include "nccl-scaling/collective.h"

namespace gpuaccept::nccl_scaling {
namespace {

ElemCounts counts(std::size_t count, std::size_t elt, int n) {
  const std::size_t base = per_rank_count(count, elt, n);
  return {base * static_cast<std::size_t>(n), base, base, 0, base};
}
double bus_factor(int n) { return static_cast<double>(n - 1) / n; }
ncclResult_t launch(const LaunchArgs& a) {
  return ncclReduceScatter(a.send, a.recv, a.count, a.dtype, ncclSum, a.comm, a.stream);
}

}  // namespace

const Collective kReduceScatter{.id = CollId::ReduceScatter,
                                .name = "reduce_scatter",
                                .redop = "sum",
                                .rooted = false,
                                .has_inplace = true,
                                .counts = counts,
                                .bus_factor = bus_factor,
                                .launch = launch};

}  // namespace gpuaccept::nccl_scaling
