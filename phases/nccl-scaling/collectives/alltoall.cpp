// alltoall: block j of rank r's input goes to rank j, landing at block r. nccl-tests
// alltoall.cu: count per peer = (count / n) rounded down to 16-byte blocks; size = the whole
// buffer (n blocks); busbw = algbw * (n-1)/n. NCCL >= 2.28 has ncclAlltoAll, which
// nccl-tests calls when it is there; before, grouped ncclSend/ncclRecv, as nccl-tests did.
// In place is not defined.
#include "nccl-scaling/collective.h"

// ncclAlltoAll is declared from NCCL 2.28 on; built against older headers (Debian 13's
// 2.22) the grouped send/receive is the only way. Weak, like nccl-tests: a binary built
// against 2.28 still loads on an older libnccl without the symbol.
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
#define GPUACCEPT_HAVE_NCCL_ALLTOALL 1
#pragma weak ncclAlltoAll
#else
#define GPUACCEPT_HAVE_NCCL_ALLTOALL 0
#endif

namespace gpuaccept::nccl_scaling {
namespace {

ElemCounts counts(std::size_t count, std::size_t elt, int n) {
  const std::size_t base = per_rank_count(count, elt, n);
  return {base * static_cast<std::size_t>(n), base * static_cast<std::size_t>(n), base, 0, 0};
}
double bus_factor(int n) { return static_cast<double>(n - 1) / n; }

bool have_alltoall() {
#if GPUACCEPT_HAVE_NCCL_ALLTOALL
  static const bool yes = [] {
    int v = 0;
    return ncclAlltoAll != nullptr && ncclGetVersion(&v) == ncclSuccess && v >= NCCL_VERSION(2, 28, 0);
  }();
  return yes;
#else
  return false;
#endif
}

ncclResult_t launch(const LaunchArgs& a) {
#if GPUACCEPT_HAVE_NCCL_ALLTOALL
  if (have_alltoall()) return ncclAlltoAll(a.send, a.recv, a.count, a.dtype, a.comm, a.stream);
#endif
  const std::size_t block = a.count * a.elt;
  ncclResult_t rc = ncclGroupStart();
  if (rc != ncclSuccess) return rc;
  for (int r = 0; r < a.nranks && rc == ncclSuccess; ++r) {
    rc = ncclSend(static_cast<const char*>(a.send) + r * block, a.count, a.dtype, r, a.comm, a.stream);
    if (rc == ncclSuccess) rc = ncclRecv(static_cast<char*>(a.recv) + r * block, a.count, a.dtype, r, a.comm, a.stream);
  }
  const ncclResult_t end = ncclGroupEnd();  // always closes the group
  return rc != ncclSuccess ? rc : end;
}

}  // namespace

const Collective kAllToAll{.id = CollId::AllToAll,
                           .name = "alltoall",
                           .redop = "none",
                           .rooted = false,
                           .has_inplace = false,
                           .counts = counts,
                           .bus_factor = bus_factor,
                           .launch = launch};

}  // namespace gpuaccept::nccl_scaling
