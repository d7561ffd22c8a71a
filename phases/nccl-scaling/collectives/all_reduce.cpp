// all_reduce: every rank ends with the sum of all inputs. nccl-tests all_reduce.cu:
// size = count * elt per rank; busbw = algbw * 2(n-1)/n (a ring sends and receives each
// byte 2(n-1)/n times: reduce-scatter then all-gather).
#include "nccl-scaling/collective.h"

namespace gpuaccept::nccl_scaling {
namespace {

ElemCounts counts(std::size_t count, std::size_t, int) { return {count, count, count, 0, 0}; }
double bus_factor(int n) { return 2.0 * (n - 1) / n; }
ncclResult_t launch(const LaunchArgs& a) {
  return ncclAllReduce(a.send, a.recv, a.count, a.dtype, ncclSum, a.comm, a.stream);
}

}  // namespace

const Collective kAllReduce{.id = CollId::AllReduce,
                            .name = "all_reduce",
                            .redop = "sum",
                            .rooted = false,
                            .has_inplace = true,
                            .counts = counts,
                            .bus_factor = bus_factor,
                            .launch = launch};

}  // namespace gpuaccept::nccl_scaling
