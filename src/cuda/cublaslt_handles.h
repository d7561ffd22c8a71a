// RAII owners for the cuBLASLt objects a GEMM needs: the library handle, the matmul
// descriptor, matrix layouts and the heuristic preference. Each is destroyed exactly
// once and cannot be copied, like the CUDA owners in cuda/cuda_handles.h.
#pragma once

#include <cstdint>
#include <utility>

#include <cublasLt.h>

#include "cuda/cuda_check.h"

namespace gpuaccept {

// Owns one cuBLASLt object of pointer type T, destroyed by Destroy.
template <typename T, cublasStatus_t (*Destroy)(T)>
class LtOwner {
 public:
  LtOwner() = default;
  LtOwner(LtOwner&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  LtOwner& operator=(LtOwner&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  LtOwner(const LtOwner&) = delete;
  LtOwner& operator=(const LtOwner&) = delete;
  ~LtOwner() {
    if (h_) Destroy(h_);
  }
  T get() const { return h_; }
  operator T() const { return h_; }

 protected:
  T h_ = nullptr;
};

class CublasLtHandle : public LtOwner<cublasLtHandle_t, cublasLtDestroy> {
 public:
  CublasLtHandle() { GPUACCEPT_CUBLAS_CHECK(cublasLtCreate(&h_)); }
};

class LtMatmulDesc : public LtOwner<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> {
 public:
  LtMatmulDesc(cublasComputeType_t compute, cudaDataType_t scale) {
    GPUACCEPT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&h_, compute, scale));
  }
  template <typename V>
  void set(cublasLtMatmulDescAttributes_t attr, const V& value) {
    GPUACCEPT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(h_, attr, &value, sizeof value));
  }
};

class LtMatrixLayout : public LtOwner<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> {
 public:
  // Column-major rows x cols with leading dimension ld.
  LtMatrixLayout(cudaDataType_t type, std::uint64_t rows, std::uint64_t cols, std::int64_t ld) {
    GPUACCEPT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&h_, type, rows, cols, ld));
  }
};

class LtMatmulPreference : public LtOwner<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> {
 public:
  LtMatmulPreference() { GPUACCEPT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&h_)); }
  template <typename V>
  void set(cublasLtMatmulPreferenceAttributes_t attr, const V& value) {
    GPUACCEPT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(h_, attr, &value, sizeof value));
  }
};

}  // namespace gpuaccept
