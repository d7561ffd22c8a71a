// reduce to root 0 (nccl-tests' default -r 0). nccl-tests reduce.cu: size = count * elt;
// busbw = algbw. Only the root's output is defined, so only the root is checked.
#include "nccl-scaling/collective.h"

namespace gpuaccept::nccl_scaling {
namespace {

ElemCounts counts(std::size_t count, std::size_t, int) { return {count, count, count, 0, 0}; }
double bus_factor(int) { return 1.0; }
ncclResult_t launch(const LaunchArgs& a) {
  return ncclReduce(a.send, a.recv, a.count, a.dtype, ncclSum, a.root, a.comm, a.stream);
}

}  // namespace

const Collective kReduce{.id = CollId::Reduce,
                         .name = "reduce",
                         .redop = "sum",
                         .rooted = true,
                         .has_inplace = true,
                         .counts = counts,
                         .bus_factor = bus_factor,
                         .launch = launch};

}  // namespace gpuaccept::nccl_scaling
