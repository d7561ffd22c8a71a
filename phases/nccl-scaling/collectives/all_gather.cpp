// all_gather: rank r's block lands at offset r * count on every rank. nccl-tests
// all_gather.cu: count per rank = (count / n) rounded down to 16-byte blocks; size = the
// whole gathered buffer (n blocks); busbw = algbw * (n-1)/n (each rank receives the n-1
// blocks it does not have). In place: rank r's input is its own block of the output.
#include "nccl-scaling/collective.h"

namespace gpuaccept::nccl_scaling {
namespace {

ElemCounts counts(std::size_t count, std::size_t elt, int n) {
  const std::size_t base = per_rank_count(count, elt, n);
  return {base, base * static_cast<std::size_t>(n), base, base, 0};
}
double bus_factor(int n) { return static_cast<double>(n - 1) / n; }
ncclResult_t launch(const LaunchArgs& a) { return ncclAllGather(a.send, a.recv, a.count, a.dtype, a.comm, a.stream); }

}  // namespace

const Collective kAllGather{.id = CollId::AllGather,
                            .name = "all_gather",
                            .redop = "none",
                            .rooted = false,
                            .has_inplace = true,
                            .counts = counts,
                            .bus_factor = bus_factor,
                            .launch = launch};

}  // namespace gpuaccept::nccl_scaling
