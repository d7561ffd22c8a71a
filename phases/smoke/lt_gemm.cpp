#include "smoke/lt_gemm.h"

namespace gpuaccept::smoke {

namespace {

struct LtTypes {
  cudaDataType_t ab, d;
  cublasComputeType_t compute;
};

LtTypes lt_types(GemmDtype t) {
  switch (t) {
    case GemmDtype::bf16: return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case GemmDtype::fp16: return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case GemmDtype::tf32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
    case GemmDtype::fp32: return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case GemmDtype::fp8_e4m3: return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
  }
  return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
}

}  // namespace

LtGemm::LtGemm(GemmDtype type, int m, int n, int k, std::size_t workspace_bytes)
    : type_(type),
      m_(m),
      n_(n),
      k_(k),
      desc_(lt_types(type).compute, CUDA_R_32F),
      a_(lt_types(type).ab, k, m, k),
      b_(lt_types(type).ab, k, n, k),
      d_(lt_types(type).d, m, n, m),
      workspace_(workspace_bytes) {
  desc_.set(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  desc_.set(CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  // fp8: A and B scale factors are left unset, which means 1 (the inputs are generated
  // in e4m3's range). Setting them, even to 1, made every algorithm of cuBLASLt 13.1
  // refuse the matmul on an H200 (CUBLAS_STATUS_NOT_SUPPORTED; tests/gpu/probes/gemm_probe.cu).
}

std::vector<cublasLtMatmulHeuristicResult_t> LtGemm::algorithms(int count, bool deterministic) const {
  LtMatmulPreference pref;
  const std::uint64_t ws = workspace_.bytes();
  pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, ws);
  if (deterministic) pref.set(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, std::uint32_t{CUBLASLT_REDUCTION_SCHEME_NONE});
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(std::max(count, 1)));
  int returned = 0;
  // C has D's layout (beta is 0, C is never read).
  GPUACCEPT_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, d_, d_, pref,
                                                        static_cast<int>(results.size()), results.data(), &returned));
  results.resize(static_cast<std::size_t>(returned));
  std::erase_if(results, [](const cublasLtMatmulHeuristicResult_t& r) { return r.state != CUBLAS_STATUS_SUCCESS; });
  return results;
}

void LtGemm::run(const cublasLtMatmulHeuristicResult_t& algo, const void* a, const void* b, void* d,
                 cudaStream_t stream) const {
  const float alpha = 1.0f, beta = 0.0f;
  GPUACCEPT_CUBLAS_CHECK(cublasLtMatmul(handle_, desc_, &alpha, a, a_, b, b_, &beta, d, d_, d, d_, &algo.algo,
                                        workspace_.get(), workspace_.bytes(), stream));
}

}  // namespace gpuaccept::smoke
