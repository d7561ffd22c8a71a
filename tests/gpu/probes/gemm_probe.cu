// gemm_probe: a diagnostic for the smoke phase's GEMM (not part of the phase). Times
// cuBLASLt bf16 GEMMs in TN and NN layouts with the top heuristic algorithms, in two
// timing styles (back to back, as smoke times; one call then a sync, as a simple PyTorch
// loop times), and tries fp8 e4m3 type combinations to see which cuBLASLt runs.
//   nvcc -O2 -arch=sm_90 -std=c++17 gemm_probe.cu -lcublasLt -o gemm_probe && ./gemm_probe 8192
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { auto e_ = (x); if (e_ != 0) { std::printf("%s failed: %d (line %d)\n", #x, (int)e_, __LINE__); std::exit(1); } } while (0)

__global__ void fill(unsigned char* p, size_t n, int elem, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    float v = ((h & 0xffff) / 65535.0f) * 2.f - 1.f;
    if (elem == 2) reinterpret_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
    else p[i] = (unsigned char)((h >> 16) & 0x77);  // an fp8 e4m3 value of magnitude < 2
  }
}

struct Try { cudaDataType_t ab, c, d; const char* name; bool alias; };

static float time_ms(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                     cublasLtMatrixLayout_t lc, cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t* algo, void* a,
                     void* b, void* c, void* d, void* ws, size_t wsb, int per_event, bool sync_each, int* status) {
  float alpha = 1, beta = 0;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> t;
  for (int w = 0; w < 5; ++w) *status = cublasLtMatmul(h, desc, &alpha, a, la, b, lb, &beta, c, lc, d, ld, algo, ws, wsb, 0);
  if (*status) return 0;
  cudaDeviceSynchronize();
  for (int r = 0; r < 20; ++r) {
    cudaEventRecord(e0);
    for (int i = 0; i < per_event; ++i) cublasLtMatmul(h, desc, &alpha, a, la, b, lb, &beta, c, lc, d, ld, algo, ws, wsb, 0);
    cudaEventRecord(e1);
    if (sync_each) cudaEventSynchronize(e1);
    else cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms / per_event);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 8192;
  cublasLtHandle_t h; CK(cublasLtCreate(&h));
  size_t wsb = 64 << 20; void* ws; CK(cudaMalloc(&ws, wsb));
  void *a, *b, *c, *d; size_t bytes = (size_t)n * n * 4;
  CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes)); CK(cudaMalloc(&c, bytes)); CK(cudaMalloc(&d, bytes));
  float* scales; CK(cudaMalloc(&scales, 16)); float ones[4] = {1, 1, 1, 1}; cudaMemcpy(scales, ones, 16, cudaMemcpyHostToDevice);
  const double flop = 2.0 * n * n * (double)n;
  // bf16: layouts and timing styles.
  fill<<<1024, 256>>>((unsigned char*)a, (size_t)n * n, 2, 1); fill<<<1024, 256>>>((unsigned char*)b, (size_t)n * n, 2, 2);
  for (int layout = 0; layout < 2; ++layout) {
    cublasOperation_t ta = layout == 0 ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    cublasLtMatmulDesc_t desc; CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, n, n, n); cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, n, n, n);
    cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, n, n, n);
    cublasLtMatmulPreference_t pref; cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
    cublasLtMatmulHeuristicResult_t res[8]; int got = 0;
    CK(cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, ld, ld, pref, 8, res, &got));
    for (int i = 0; i < got; ++i) {
      int st = 0;
      float b2b = time_ms(h, desc, la, lb, ld, ld, &res[i].algo, a, b, d, d, ws, wsb, std::max(1, 6000 / (n / 8192 * n / 8192 * n / 8192 * 1600 + 1)), false, &st);
      float one = time_ms(h, desc, la, lb, ld, ld, &res[i].algo, a, b, d, d, ws, wsb, 1, true, &st);
      std::printf("bf16 %s n=%d algo#%d ws=%zu: back-to-back %.1f TFLOP/s, one-per-event %.1f TFLOP/s%s\n",
                  layout == 0 ? "TN" : "NN", n, i, res[i].workspaceSize, flop / b2b / 1e9, flop / one / 1e9, st ? " (failed)" : "");
    }
  }
  // fp8 e4m3 combinations.
  fill<<<1024, 256>>>((unsigned char*)a, (size_t)n * n, 1, 3); fill<<<1024, 256>>>((unsigned char*)b, (size_t)n * n, 1, 4);
  const Try tries[] = {{CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_16BF, "C=D bf16 aliased", true},
                       {CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_16BF, "C, D bf16 separate", false},
                       {CUDA_R_8F_E4M3, CUDA_R_32F, CUDA_R_32F, "C=D fp32 aliased", true},
                       {CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_8F_E4M3, "C bf16, D e4m3", false}};
  for (const Try& t : tries) {
    for (int scaled = 0; scaled < 2; ++scaled) {
      cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
      cublasLtMatmulDesc_t desc; CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
      if (scaled) {
        const float* sa = scales; const float* sb = scales + 1; const float* sd = scales + 2;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa);
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb);
        if (t.d == CUDA_R_8F_E4M3) cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &sd, sizeof sd);
      }
      cublasLtMatrixLayout_t la, lb, lc, ld;
      cublasLtMatrixLayoutCreate(&la, t.ab, n, n, n); cublasLtMatrixLayoutCreate(&lb, t.ab, n, n, n);
      cublasLtMatrixLayoutCreate(&lc, t.c, n, n, n); cublasLtMatrixLayoutCreate(&ld, t.d, n, n, n);
      cublasLtMatmulPreference_t pref; cublasLtMatmulPreferenceCreate(&pref);
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
      cublasLtMatmulHeuristicResult_t res[4]; int got = 0;
      int hs = cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, ld, pref, 4, res, &got);
      std::printf("fp8 %s %s: heuristic status %d, %d algos\n", t.name, scaled ? "scaled" : "unscaled", hs, got);
      for (int i = 0; i < got; ++i) {
        int st = 0;
        float ms = time_ms(h, desc, la, lb, lc, ld, &res[i].algo, a, b, c, t.alias ? c : d, ws, wsb, 4, false, &st);
        std::printf("   algo#%d: status %d %s %.1f TFLOP/s\n", i, st, cublasLtGetStatusString((cublasStatus_t)st), st ? 0.0 : flop / ms / 1e9);
      }
    }
  }
  std::printf("cuBLASLt version %zu\n", cublasLtGetVersion());
  return 0;
}
