// An NCCL communicator over every rank of a World: rank 0 makes the unique id and
// World broadcasts it (PMIx), so no address is ever configured by hand.
#pragma once

#include <atomic>

#include <nccl.h>

#include "world/world.h"

namespace gpuaccept {

class NcclComm {
 public:
  // Collective over `world`; the current CUDA device must already be set.
  explicit NcclComm(World& world);
  // Wraps a communicator made by ncclCommSplit.
  explicit NcclComm(ncclComm_t comm) : comm_(comm) {}
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  NcclComm(NcclComm&& o) noexcept : comm_(o.comm_.exchange(nullptr)) {}
  ~NcclComm();

  ncclComm_t get() const { return comm_.load(); }
  operator ncclComm_t() const { return comm_.load(); }
  int rank() const;
  int size() const;
  // ncclCommAbort: for a watchdog that gave up on a hung collective. Safe from another
  // thread: exactly one caller takes the handle (atomic exchange) and aborts it; later
  // get() returns nullptr and the destructor does nothing.
  void abort();

 private:
  std::atomic<ncclComm_t> comm_{nullptr};
};

// "2.28.3" of the NCCL library this process runs with.
std::string nccl_version();

}  // namespace gpuaccept
