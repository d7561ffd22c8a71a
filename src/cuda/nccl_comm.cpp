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
  ncclComm_t c = nullptr;
  GPUACCEPT_NCCL_CHECK(ncclCommInitRank(&c, world.size(), id, world.rank()));
  comm_ = c;
}

NcclComm::~NcclComm() {
  if (ncclComm_t c = comm_.exchange(nullptr)) ncclCommDestroy(c);
}

int NcclComm::rank() const {
  int r = 0;
  GPUACCEPT_NCCL_CHECK(ncclCommUserRank(get(), &r));
  return r;
}

int NcclComm::size() const {
  int n = 0;
  GPUACCEPT_NCCL_CHECK(ncclCommCount(get(), &n));
  return n;
}

void NcclComm::abort() {
  if (ncclComm_t c = comm_.exchange(nullptr)) ncclCommAbort(c);
}

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "";
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
}

}  // namespace gpuaccept
