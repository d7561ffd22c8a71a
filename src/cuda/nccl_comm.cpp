#include "cuda/nccl_comm.h"

#include <cstring>

#include <fmt/format.h>

#include "cuda/cuda_check.h"

namespace gpuaccept {

NcclComm::NcclComm(World& world) {
  ncclUniqueId id{};
  if (world.rank() == 0) GPUACCEPT_NCCL_CHECK(ncclGetUniqueId(&id));
  const Bytes b = world.broadcast(std::as_bytes(std::span(&id, 1)), 0);
  std::memcpy(&id, b.data(), sizeof id);
  GPUACCEPT_NCCL_CHECK(ncclCommInitRank(&comm_, world.size(), id, world.rank()));
}

NcclComm::~NcclComm() {
  if (comm_) ncclCommDestroy(comm_);
}

int NcclComm::rank() const {
  int r = 0;
  GPUACCEPT_NCCL_CHECK(ncclCommUserRank(comm_, &r));
  return r;
}

int NcclComm::size() const {
  int n = 0;
  GPUACCEPT_NCCL_CHECK(ncclCommCount(comm_, &n));
  return n;
}

void NcclComm::abort() {
  if (comm_) {
    ncclCommAbort(comm_);
    comm_ = nullptr;
  }
}

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "";
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
}

}  // namespace gpuaccept
