// One collective as nccl-tests defines it, so that our figures mean what nccl-tests'
// mean: how a "size" becomes element counts and buffer offsets (getCollByteCount), the
// bus-bandwidth factor (getBw), and the NCCL call (runColl). Each collective lives in its
// own file under collectives/, like nccl-tests' src/<name>.cu.
//
// "size" (-b/-e, the records' `bytes`) is nccl-tests' size column: for all_gather,
// reduce_scatter and alltoall the whole buffer across ranks (recv resp. send), rounded
// down to whole 16-byte blocks per rank; for the others the per-rank message. algbw is
// that size divided by the time, busbw = algbw * bus_factor(nranks).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "nccl-scaling/expected.h"

namespace gpuaccept::nccl_scaling {

// In elements of the dtype, as nccl-tests' getCollByteCount returns them.
struct ElemCounts {
  std::size_t send = 0;   // elements each rank sends (its input buffer)
  std::size_t recv = 0;   // elements each rank receives (its output buffer)
  std::size_t param = 0;  // the count passed to NCCL
  // In place, rank r's input starts at recv + r * send_inplace_offset and its output at
  // recv + r * recv_inplace_offset.
  std::size_t send_inplace_offset = 0;
  std::size_t recv_inplace_offset = 0;

  // nccl-tests' size column: max(send, recv) elements, in bytes.
  std::size_t size_bytes(std::size_t elt) const { return (send > recv ? send : recv) * elt; }
};

struct LaunchArgs {
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;  // ElemCounts::param
  ncclDataType_t dtype = ncclFloat32;
  std::size_t elt = 4;  // bytes per element of dtype
  int root = 0;
  int rank = 0;
  int nranks = 1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

struct Collective {
  CollId id;
  std::string_view name;   // the records' test name: "all_reduce"
  std::string_view redop;  // the table's redop column: "sum" or "none"
  bool rooted;             // broadcast, reduce: root 0, like nccl-tests' default -r 0
  // In place is defined (nccl-tests times alltoall and sendrecv "in place" with the same
  // buffer for both sides but does not check them; we do not run an undefined operation).
  bool has_inplace;
  ElemCounts (*counts)(std::size_t count, std::size_t elt_size, int nranks);
  double (*bus_factor)(int nranks);
  // Enqueues the operation; returns NCCL's result (ncclInProgress on a nonblocking
  // communicator means "being enqueued": the caller waits for the communicator).
  ncclResult_t (*launch)(const LaunchArgs& a);
};

extern const Collective kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAllToAll, kSendRecv;

// Every collective, in the order the sweep runs them.
const std::vector<const Collective*>& all_collectives();
const Collective* find_collective(std::string_view name);

// nccl-tests rounds per-rank counts of the gathering collectives down to whole 16-byte
// blocks: (count / nranks) & -(16 / elt).
std::size_t per_rank_count(std::size_t count, std::size_t elt, int nranks);

// The element counts for a requested size in bytes (nccl-tests: count = size / elt).
inline ElemCounts counts_for_size(const Collective& c, std::size_t size_bytes, std::size_t elt, int nranks) {
  return c.counts(size_bytes / elt, elt, nranks);
}

}  // namespace gpuaccept::nccl_scaling
