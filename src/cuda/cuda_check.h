// The CUDA, cuBLAS and NCCL legs of the one error path (common/error.h): a failed
// call throws CallError naming the call, the library's error text, file:line, rank
// and host.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "common/error.h"

#define GPUACCEPT_CUDA_CHECK(call)                                                        \
  do {                                                                                    \
    const cudaError_t gpa_rc_ = (call);                                                   \
    if (gpa_rc_ != cudaSuccess) ::gpuaccept::raise_call_error("CUDA", #call, cudaGetErrorString(gpa_rc_)); \
  } while (0)

// After a kernel launch: launch errors are only reported by the next runtime call.
#define GPUACCEPT_CUDA_CHECK_LAUNCH() GPUACCEPT_CUDA_CHECK(cudaGetLastError())

#define GPUACCEPT_NCCL_CHECK(call)                                                        \
  do {                                                                                    \
    const ncclResult_t gpa_rc_ = (call);                                                  \
    if (gpa_rc_ != ncclSuccess && gpa_rc_ != ncclInProgress)                              \
      ::gpuaccept::raise_call_error("NCCL", #call, ::gpuaccept::nccl_error_text(gpa_rc_)); \
  } while (0)

#define GPUACCEPT_CUBLAS_CHECK(call)                                                      \
  do {                                                                                    \
    const cublasStatus_t gpa_rc_ = (call);                                                \
    if (gpa_rc_ != CUBLAS_STATUS_SUCCESS)                                                 \
      ::gpuaccept::raise_call_error("cuBLAS", #call, cublasLtGetStatusString(gpa_rc_));   \
  } while (0)

namespace gpuaccept {
// ncclGetErrorString plus ncclGetLastError's detail, which names the failing peer.
std::string nccl_error_text(ncclResult_t rc);
}  // namespace gpuaccept
