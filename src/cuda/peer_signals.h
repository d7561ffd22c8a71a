// Handshakes between the ranks of one node, queued on a stream without a kernel or an NCCL
// call: each rank's GPU memory holds one 32-bit slot per rank; a rank signals by writing the
// handshake's number into its slot in every peer's memory (cuStreamWriteValue32, mapped with
// CUDA IPC: cuda/peer_memory.h), and its stream waits until a peer's slot in its own memory
// has reached a number (cuStreamWaitValue32). The GPU's front end does both: no SM is held
// spinning, as the one-block NCCL all-reduce it replaces held one (ddp's copy-engine all-reduce,
// docs/performance.md, 2026-11-27: the compute stream's gaps between kernels doubled beside
// those spinning kernels).
//
// Ordering: the write is preceded by a fence over what the stream did before it (the driver's
// default for cuStreamWriteValue32), so a peer that sees number n also sees every write this
// rank's stream made before signalling n. Numbers only grow (a cyclic comparison, so they may
// wrap), and every rank must signal the same count: the handshakes are a protocol, as
// collectives are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/cuda_handles.h"

namespace gpuaccept {

class PeerSignals {
 public:
  PeerSignals() = default;
  // world slots, zeroed on `stream`.
  PeerSignals(int world, cudaStream_t stream);
  PeerSignals(PeerSignals&&) noexcept = default;
  PeerSignals& operator=(PeerSignals&&) noexcept = default;

  // "" when the driver offers the stream memory operations, otherwise why not.
  static std::string unavailable();

  // This rank's slots, for the peers to map (PeerMemory::open).
  void* slots() const { return slots_.get(); }
  // slots[p]: rank p's slots as mapped here (this rank's own at p == rank).
  void connect(int rank, std::vector<void*> slots);

  // After everything queued on `stream` so far: the next number into this rank's slot in every
  // peer's memory. Returns the number, for the peers' wait().
  std::uint32_t signal(cudaStream_t stream);
  // What is queued on `stream` from now on waits until rank `peer` has signalled `number`.
  void wait(cudaStream_t stream, int peer, std::uint32_t number) const;

 private:
  DeviceBuffer<std::uint32_t> slots_;    // (world): slot p written by rank p
  int rank_ = 0;
  std::vector<std::uint32_t*> peer_slots_;  // (world): rank p's slots, mapped here
  std::uint32_t signalled_ = 0;
};

}  // namespace gpuaccept
