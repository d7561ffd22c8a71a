// broadcast from root 0 (nccl-tests' default -r 0). nccl-tests broadcast.cu: size =
// count * elt; busbw = algbw (the root's data crosses each link once).
#include "nccl-scaling/collective.h"

namespace gpuaccept::nccl_scaling {
namespace {

ElemCounts counts(std::size_t count, std::size_t, int) { return {count, count, count, 0, 0}; }
double bus_factor(int) { return 1.0; }
ncclResult_t launch(const LaunchArgs& a) {
  return ncclBroadcast(a.send, a.recv, a.count, a.dtype, a.root, a.comm, a.stream);
}

}  // namespace

const Collective kBroadcast{.id = CollId::Broadcast,
                            .name = "broadcast",
                            .redop = "none",
                            .rooted = true,
                            .has_inplace = true,
                            .counts = counts,
                            .bus_factor = bus_factor,
                            .launch = launch};

}  // namespace gpuaccept::nccl_scaling
