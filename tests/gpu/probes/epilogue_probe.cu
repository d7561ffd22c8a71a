// epilogue_probe: which cuBLASLt epilogues of the GELU backward exist for ddp's MLP shape, and
// what each costs (a diagnostic, not part of a phase). The shape is GPT-2 124M's fc backward
// at micro-batch 16 x 1024: dinp (N, 4C) = (dout (N, C) W (C, 4C)) * gelu'(pre), N = 16384,
// C = 768, in cuBLAS's column-major terms m = 4C, n = N, k = C (src/train/matmul.cpp).
// For DGELU and DGELU_BGRAD with an fp32 or a bf16 bias gradient it prints the heuristic's
// status and count, then times every candidate (the median of 20 back-to-back runs) and names
// the fastest. With DGELU_BGRAD, the fp32 bias gradient is checked against the column sums of
// the D it wrote (summed on the host in double).
//   built by tests/gpu/CMakeLists.txt; run as `epilogue-probe [N]`.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_common.cuh"

namespace {

struct Case {
  const char* name;
  cublasLtEpilogue_t epilogue;
  cudaDataType_t bias_type;  // for DGELU_BGRAD
};

}  // namespace

int main(int argc, char** argv) {
  const int N = argc > 1 ? std::atoi(argv[1]) : 16384, C = 768, m = 4 * C, n = N, k = C;
  cublasLtHandle_t h;
  CK(cublasLtCreate(&h));
  const size_t wsb = size_t{32} << 20;
  void* ws;
  CK(cudaMalloc(&ws, wsb));
  __nv_bfloat16 *w, *dout, *pre, *d;
  float* dbias;
  CK(cudaMalloc(&w, sizeof(__nv_bfloat16) * m * k));
  CK(cudaMalloc(&dout, sizeof(__nv_bfloat16) * k * static_cast<size_t>(n)));
  CK(cudaMalloc(&pre, sizeof(__nv_bfloat16) * m * static_cast<size_t>(n)));
  CK(cudaMalloc(&d, sizeof(__nv_bfloat16) * m * static_cast<size_t>(n)));
  CK(cudaMalloc(&dbias, sizeof(float) * m));
  fill<<<1024, 256>>>(w, static_cast<size_t>(m) * k, 1, 0.05f);
  fill<<<1024, 256>>>(dout, static_cast<size_t>(k) * n, 2, 1.f);
  fill<<<1024, 256>>>(pre, static_cast<size_t>(m) * n, 3, 3.f);
  CK(cudaDeviceSynchronize());

  cublasLtMatrixLayout_t la, lb, ld;
  CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, m, k, m));
  CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, n, k));
  CK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, m, n, m));
  const double flop = 2.0 * m * n * static_cast<double>(k);
  const Case cases[] = {{"DGELU", CUBLASLT_EPILOGUE_DGELU, CUDA_R_32F},
                        {"DGELU_BGRAD fp32 bias", CUBLASLT_EPILOGUE_DGELU_BGRAD, CUDA_R_32F},
                        {"DGELU_BGRAD bf16 bias", CUBLASLT_EPILOGUE_DGELU_BGRAD, CUDA_R_16BF}};
  for (const Case& c : cases) {
    cublasLtMatmulDesc_t desc;
    CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &c.epilogue, sizeof c.epilogue));
    const int64_t aux_ld = m;
    const cudaDataType_t aux_type = CUDA_R_16BF;
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld));
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &aux_type, sizeof aux_type));
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &pre, sizeof pre));
    if (c.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD) {
      CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &c.bias_type, sizeof c.bias_type));
      CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias));
    }
    cublasLtMatmulPreference_t pref;
    CK(cublasLtMatmulPreferenceCreate(&pref));
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
    cublasLtMatmulHeuristicResult_t results[8] = {};
    int returned = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, ld, ld, pref, 8, results, &returned);
    std::printf("%-24s heuristic: %s, %d candidates\n", c.name, cublasLtGetStatusString(st), returned);
    float best_ms = 0;
    int best = -1;
    for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < returned; ++i) {
      const float alpha = 1, beta = 0;
      auto run = [&] { return cublasLtMatmul(h, desc, &alpha, w, la, dout, lb, &beta, d, ld, d, ld, &results[i].algo, ws, wsb, 0); };
      if (run() != CUBLAS_STATUS_SUCCESS) continue;
      const float median = median_ms(run, 20);
      std::printf("  candidate %d: %.1f us (%.0f TFLOP/s), workspace %zu bytes\n", i, median * 1e3,
                  flop / (median * 1e-3) / 1e12, results[i].workspaceSize);
      if (best < 0 || median < best_ms) best_ms = median, best = i;
    }
    if (best >= 0 && c.epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD && c.bias_type == CUDA_R_32F) {
      // The fastest candidate once more, its bias gradient against the sums of its own D.
      const float alpha = 1, beta = 0;
      CK(cublasLtMatmul(h, desc, &alpha, w, la, dout, lb, &beta, d, ld, d, ld, &results[best].algo, ws, wsb, 0));
      std::vector<__nv_bfloat16> hd(static_cast<size_t>(m) * n);
      std::vector<float> hb(m);
      CK(cudaMemcpy(hd.data(), d, hd.size() * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hb.data(), dbias, hb.size() * sizeof(float), cudaMemcpyDeviceToHost));
      double worst = 0, scale = 0;
      for (int r = 0; r < m; ++r) {
        double sum = 0, mag = 0;
        for (int col = 0; col < n; ++col) {
          const double v = __bfloat162float(hd[static_cast<size_t>(col) * m + r]);
          sum += v;
          mag += std::fabs(v);
        }
        worst = std::max(worst, std::fabs(sum - hb[r]));
        scale = std::max(scale, mag);
      }
      std::printf("  bias gradient against the sums of D: largest error %.3g, largest sum of magnitudes %.3g\n", worst,
                  scale);
    }
    if (best >= 0) std::printf("  fastest: candidate %d, %.1f us\n", best, best_ms * 1e3);
    CK(cublasLtMatmulPreferenceDestroy(pref));
    CK(cublasLtMatmulDescDestroy(desc));
  }
  return 0;
}
