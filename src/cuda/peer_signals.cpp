#include "cuda/peer_signals.h"

#include <mutex>

#include <cuda.h>
#include <fmt/format.h>

#include "cuda/cuda_check.h"

namespace gpuaccept {

namespace {

// The driver's stream memory operations, found through the runtime (cudaGetDriverEntryPoint):
// the binaries do not link libcuda, so that they start (and SKIP) on machines without a driver.
struct MemOps {
  CUresult (*write)(CUstream, CUdeviceptr, cuuint32_t, unsigned) = nullptr;
  CUresult (*wait)(CUstream, CUdeviceptr, cuuint32_t, unsigned) = nullptr;
  CUresult (*error_name)(CUresult, const char**) = nullptr;
  std::string missing;  // why they are not there
};

const MemOps& mem_ops() {
  static MemOps ops;
  static std::once_flag once;
  std::call_once(once, [] {
    auto find = [](const char* symbol, auto& fn) {
      void* p = nullptr;
      cudaDriverEntryPointQueryResult found{};
      // 12000: the semantics of CUDA 12 (cuStreamWriteValue32_v2 and its kin).
      const cudaError_t rc = cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &found);
      if (rc != cudaSuccess || found != cudaDriverEntryPointSuccess || !p) {
        if (ops.missing.empty())
          ops.missing = fmt::format("the driver has no {} ({})", symbol, rc != cudaSuccess ? cudaGetErrorString(rc)
                                                                                            : "symbol not found");
        return;
      }
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    find("cuStreamWriteValue32", ops.write);
    find("cuStreamWaitValue32", ops.wait);
    find("cuGetErrorName", ops.error_name);
  });
  return ops;
}

void check(CUresult rc, const char* call, const std::source_location& loc = std::source_location::current()) {
  if (rc == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (mem_ops().error_name) mem_ops().error_name(rc, &name);
  raise_call_error("CUDA driver", call, name ? name : fmt::format("CUresult {}", static_cast<int>(rc)), loc);
}

}  // namespace

std::string PeerSignals::unavailable() { return mem_ops().missing; }

PeerSignals::PeerSignals(int world, cudaStream_t stream) : slots_(static_cast<std::size_t>(world)) {
  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(slots_.get(), 0, slots_.bytes(), stream));
}

void PeerSignals::connect(int rank, std::vector<void*> slots) {
  rank_ = rank;
  peer_slots_.clear();
  for (void* s : slots) peer_slots_.push_back(static_cast<std::uint32_t*>(s));
  signalled_ = 0;
}

std::uint32_t PeerSignals::signal(cudaStream_t stream) {
  ++signalled_;
  for (std::size_t p = 0; p < peer_slots_.size(); ++p) {
    if (static_cast<int>(p) == rank_) continue;
    // Default flags: a fence over the stream's earlier writes comes before this one.
    check(mem_ops().write(stream, reinterpret_cast<CUdeviceptr>(peer_slots_[p] + rank_), signalled_,
                          CU_STREAM_WRITE_VALUE_DEFAULT),
          "cuStreamWriteValue32 (a peer's slot)");
  }
  return signalled_;
}

void PeerSignals::wait(cudaStream_t stream, int peer, std::uint32_t number) const {
  // GEQ compares cyclically: (int32_t)(*slot - number) >= 0.
  check(mem_ops().wait(stream, reinterpret_cast<CUdeviceptr>(slots_.get() + peer), number, CU_STREAM_WAIT_VALUE_GEQ),
        "cuStreamWaitValue32 (this rank's slot of a peer)");
}

}  // namespace gpuaccept
