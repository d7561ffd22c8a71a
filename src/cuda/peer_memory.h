// Other ranks' device allocations mapped into this process with CUDA IPC, so that copies can
// read them straight out of their GPUs' memory with the copy engines: no kernel, so no SM taken
// from the compute running beside them. NCCL's collectives run as kernels on some of the SMs,
// and the kernels beside them slow down; with copies they slow less (docs/performance-history.md:
// fsdp-lora's gathers, 95.9-96.1% scaling on two H200s against 94.3-95.0% by NCCL). Only for the
// ranks of one node whose GPUs can map each other's memory.
//
// Users: fsdp-lora's gathers of the frozen base's shards (fsdp_lora.gather: copy_engine), which
// need no handshake step by step since the shards never change, and ddp's copy-engine
// all-reduce of the gradient buckets (ddp.all_reduce: copy_engine), which does. What every user
// needs is the start (every owner has filled or allocated what it maps) and the end (no rank
// still reads an allocation its owner is about to write or free): open() and close() are
// collective over the communicator and end with every rank past the same point.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

namespace gpuaccept {

class PeerMemory {
 public:
  PeerMemory() = default;
  ~PeerMemory();  // unmaps what is still mapped, without a barrier (the phase calls close())
  PeerMemory(const PeerMemory&) = delete;
  PeerMemory& operator=(const PeerMemory&) = delete;

  // Collective over `comm` (rank of world). mine: this rank's allocations, each the start of
  // a cudaMalloc, the same number on every rank, their contents complete (the caller has
  // synchronized their writes). Exchanges the IPC handles on `stream` and maps every other
  // rank's. Returns "" when every rank mapped every other's; otherwise why not, naming the
  // ranks (the same text on every rank), and nothing stays mapped.
  std::string open(ncclComm_t comm, int rank, int world, std::span<void* const> mine, cudaStream_t stream);
  // Collective: waits for `stream` (the copies reading the peers' allocations), unmaps them, and
  // returns once every rank has done so.
  void close(ncclComm_t comm, cudaStream_t stream);
  bool is_open() const { return open_; }
  // Rank p's allocation i (this rank's own for p == rank).
  const void* at(int p, int i) const { return ptrs_[static_cast<std::size_t>(p * count_ + i)]; }

 private:
  void unmap();

  bool open_ = false;
  int world_ = 0, count_ = 0;
  std::vector<void*> ptrs_;   // (world, count)
  std::vector<char> mapped_;  // (world, count): opened here through IPC, to be closed
};

}  // namespace gpuaccept
