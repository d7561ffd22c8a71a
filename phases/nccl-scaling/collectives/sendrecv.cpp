// sendrecv: each rank sends to its ring neighbour above and receives from the one below
// (nccl-tests sendrecv.cu). size = count * elt; busbw = algbw. In place is not defined.
#include "nccl-scaling/collective.h"

namespace gpuaccept::nccl_scaling {
namespace {

ElemCounts counts(std::size_t count, std::size_t, int) { return {count, count, count, 0, 0}; }
double bus_factor(int) { return 1.0; }
ncclResult_t launch(const LaunchArgs& a) {
  const int to = (a.rank + 1) % a.nranks, from = (a.rank - 1 + a.nranks) % a.nranks;
  ncclResult_t rc = ncclGroupStart();
  if (rc != ncclSuccess) return rc;
  rc = ncclSend(a.send, a.count, a.dtype, to, a.comm, a.stream);
  if (rc == ncclSuccess) rc = ncclRecv(a.recv, a.count, a.dtype, from, a.comm, a.stream);
  const ncclResult_t end = ncclGroupEnd();
  return rc != ncclSuccess ? rc : end;
}

}  // namespace

const Collective kSendRecv{.id = CollId::SendRecv,
                           .name = "sendrecv",
                           .redop = "none",
                           .rooted = false,
                           .has_inplace = false,
                           .counts = counts,
                           .bus_factor = bus_factor,
                           .launch = launch};

}  // namespace gpuaccept::nccl_scaling
