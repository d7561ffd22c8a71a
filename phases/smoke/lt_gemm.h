// One square-or-not GEMM configuration in cuBLASLt, D = A^T * B ("TN": both operands
// K-major, the layout fp8 requires and tensor cores read natively), column-major:
//   A: k x m (lda = k), B: k x n (ldb = k), D: m x n (ldd = m), alpha 1, beta 0.
// Row i of op(A) and column j of B are contiguous, so verification copies them cheaply.
#pragma once

#include <cstddef>
#include <vector>

#include "cuda/cublaslt_handles.h"
#include "cuda/cuda_handles.h"
#include "smoke/gemm_verify.h"

namespace gpuaccept::smoke {

class LtGemm {
 public:
  LtGemm(GemmDtype type, int m, int n, int k, std::size_t workspace_bytes);

  // Up to `count` algorithms from cuBLASLt's heuristic, best estimate first.
  // `deterministic`: only algorithms without split-K reduction, whose output is
  // bitwise repeatable (the sustained-load corruption check depends on it).
  std::vector<cublasLtMatmulHeuristicResult_t> algorithms(int count, bool deterministic) const;

  void run(const cublasLtMatmulHeuristicResult_t& algo, const void* a, const void* b, void* d,
           cudaStream_t stream) const;

  GemmDtype type() const { return type_; }
  int m() const { return m_; }
  int n() const { return n_; }
  int k() const { return k_; }
  double flops() const { return 2.0 * m_ * n_ * k_; }
  std::size_t a_bytes() const { return static_cast<std::size_t>(k_) * m_ * input_bytes(type_); }
  std::size_t b_bytes() const { return static_cast<std::size_t>(k_) * n_ * input_bytes(type_); }
  std::size_t d_bytes() const { return static_cast<std::size_t>(m_) * n_ * output_bytes(type_); }

 private:
  GemmDtype type_;
  int m_, n_, k_;
  CublasLtHandle handle_;
  LtMatmulDesc desc_;
  LtMatrixLayout a_, b_, d_;
  DeviceBuffer<std::byte> workspace_;
};

}  // namespace gpuaccept::smoke
