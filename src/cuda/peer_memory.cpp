#include "cuda/peer_memory.h"

#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_handles.h"

namespace gpuaccept {

namespace {

// Every rank's `bytes` from `mine` side by side, in rank order (ncclAllGather on `stream`,
// waited for: all ranks have reached this call once it returns).
std::vector<char> all_gather_bytes(const void* mine, std::size_t bytes, int world, ncclComm_t comm,
                                   cudaStream_t stream) {
  DeviceBuffer<char> send(bytes), all_dev(bytes * static_cast<std::size_t>(world));
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(send.get(), mine, bytes, cudaMemcpyHostToDevice, stream));
  GPUACCEPT_NCCL_CHECK(ncclAllGather(send.get(), all_dev.get(), bytes, ncclChar, comm, stream));
  std::vector<char> all(all_dev.size());
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(all.data(), all_dev.get(), all.size(), cudaMemcpyDeviceToHost, stream));
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return all;
}

}  // namespace

PeerMemory::~PeerMemory() { unmap(); }

void PeerMemory::unmap() {
  for (std::size_t i = 0; i < ptrs_.size(); ++i)
    if (i < mapped_.size() && mapped_[i]) cudaIpcCloseMemHandle(ptrs_[i]);
  ptrs_.clear();
  mapped_.clear();
  open_ = false;
}

std::string PeerMemory::open(ncclComm_t comm, int rank, int world, std::span<void* const> mine, cudaStream_t stream) {
  unmap();
  world_ = world;
  count_ = static_cast<int>(mine.size());
  // A failure here is reported like one to map, below: every rank still takes part in both
  // exchanges, so none waits for another that gave up.
  std::string error;  // this rank's first failure
  std::vector<cudaIpcMemHandle_t> handles(mine.size());
  for (std::size_t i = 0; i < mine.size() && error.empty(); ++i) {
    const cudaError_t rc = cudaIpcGetMemHandle(&handles[i], mine[i]);
    if (rc != cudaSuccess) {
      (void)cudaGetLastError();
      error = fmt::format("cudaIpcGetMemHandle of its own allocation {}: {}", i, cudaGetErrorString(rc));
    }
  }
  const std::size_t bytes = handles.size() * sizeof(cudaIpcMemHandle_t);
  const std::vector<char> all = all_gather_bytes(handles.data(), bytes, world, comm, stream);

  ptrs_.assign(static_cast<std::size_t>(world * count_), nullptr);
  mapped_.assign(ptrs_.size(), 0);
  for (int p = 0; p < world; ++p)
    for (int i = 0; i < count_; ++i) {
      const std::size_t k = static_cast<std::size_t>(p * count_ + i);
      if (p == rank) {
        ptrs_[k] = mine[static_cast<std::size_t>(i)];
        continue;
      }
      if (!error.empty()) continue;
      cudaIpcMemHandle_t h;
      std::memcpy(&h, all.data() + static_cast<std::size_t>(p) * bytes + static_cast<std::size_t>(i) * sizeof h, sizeof h);
      const cudaError_t rc = cudaIpcOpenMemHandle(&ptrs_[k], h, cudaIpcMemLazyEnablePeerAccess);
      if (rc == cudaSuccess) {
        mapped_[k] = 1;
      } else {
        (void)cudaGetLastError();  // not sticky: clear it
        error = fmt::format("cudaIpcOpenMemHandle of rank {}'s allocation {}: {}", p, i, cudaGetErrorString(rc));
      }
    }
  // Every rank learns every rank's outcome, so all take the same way.
  char status[160] = {};
  std::snprintf(status, sizeof status, "%s", error.c_str());
  const std::vector<char> outcomes = all_gather_bytes(status, sizeof status, world, comm, stream);
  std::string why;
  for (int p = 0; p < world; ++p) {
    const char* s = outcomes.data() + static_cast<std::size_t>(p) * sizeof status;
    if (s[0] != '\0') why += fmt::format("{}rank {}: {}", why.empty() ? "" : "; ", p, s);
  }
  if (!why.empty()) {
    unmap();
    return why;
  }
  open_ = true;
  return "";
}

void PeerMemory::close(ncclComm_t comm, cudaStream_t stream) {
  if (!open_) return;
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));
  unmap();
  // The barrier: once it returns, no rank reads another's allocations any more.
  const char done = 1;
  (void)all_gather_bytes(&done, 1, world_, comm, stream);
}

}  // namespace gpuaccept
