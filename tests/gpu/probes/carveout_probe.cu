// carveout_probe: a diagnostic for the ddp phase's scaling (not part of the phase). While
// the gradients are all-reduced, NCCL's kernels hold some SMs for the whole reduction. A
// cuBLASLt kernel that is persistent (one CTA per SM, each walking a fixed list of tiles)
// and cannot share an SM with them then runs its last CTAs in a second wave, after others
// have finished all their tiles: the matmul may take up to twice as long. cuBLASLt's
// CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET asks for algorithms sized for fewer SMs.
//
// Hopper matmul kernels also run as thread-block clusters, which the hardware places on
// free SMs of one GPC together: SMs held here and there can leave too few such groups.
//
// For GPT-2 124M's backward matmuls (16384 tokens, 768 channels) this times, per shape,
// in µs per matmul:
//   alone       all SMs free, algorithm chosen for all SMs
//   hog         K SMs held by a spinning kernel that nothing can share an SM with (it
//               takes most of the shared memory, as an NCCL CTA takes the registers),
//               launched in clusters of HOG_CLUSTER CTAs (NCCL's CGA clusters: 4 on Hopper)
//   hog,tgt     the same, algorithm chosen for SMs - K (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET)
//   hog,1x1     algorithm chosen for all SMs among candidates forced to 1x1x1 clusters
//   hog,t1      SMs - K and 1x1x1 clusters
//   alone,t1    that algorithm with all SMs free (its cost when NCCL is not running)
// Each algorithm is the fastest of cuBLASLt's first 8 candidates, timed alone, as
// src/train/matmul.cpp chooses.
//   [HOG_CLUSTER=4] build/bin/carveout-probe [K ...]     (default K: 8 16 32)
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                      \
  do {                                                                             \
    auto e_ = (x);                                                                 \
    if (e_ != 0) {                                                                 \
      std::printf("%s failed: %d (%s:%d)\n", #x, (int)e_, __FILE__, __LINE__);     \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

constexpr int kHogSmem = 200 << 10;  // leaves no room on the SM for a matmul CTA

// Spins until *stop (device memory, set by a copy) is set; *started counts resident CTAs.
__global__ void hog(volatile int* stop, int* started) {
  extern __shared__ char smem[];
  if (threadIdx.x == 0) {
    smem[0] = 1;
    atomicAdd(started, 1);
    while (*stop == 0) __nanosleep(2000);
  }
  __syncthreads();
}

__global__ void fill(__nv_bfloat16* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = __float2bfloat16(((h & 0xffff) / 65535.0f) - 0.5f);
  }
}

struct Shape {
  const char* name;
  bool ta, tb;
  int m, n, k;
  bool fp32_accumulate;  // weight gradients: fp32 D += ...
};

struct Gemm {
  cublasLtHandle_t h;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, d;
  cublasLtMatmulAlgo_t algo;
  const Shape& s;
  void *A, *B, *D, *ws;
  size_t wsb;
  void run(cudaStream_t st, const cublasLtMatmulAlgo_t* al = nullptr) {
    const float alpha = 1, beta = s.fp32_accumulate ? 1.f : 0.f;
    CK(cublasLtMatmul(h, desc, &alpha, A, a, B, b, &beta, D, d, D, d, al ? al : &algo, ws, wsb, st));
  }
};

float time_loop(Gemm& g, cudaStream_t st, int reps, const cublasLtMatmulAlgo_t* al = nullptr) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  g.run(st, al);
  CK(cudaEventRecord(e0, st));
  for (int i = 0; i < reps; ++i) g.run(st, al);
  CK(cudaEventRecord(e1, st));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return ms * 1000 / reps;  // µs
}

// Plans the shape for `sm_target` SMs (0: all) and keeps the fastest candidate; with
// no_cluster, every candidate is first forced to 1x1x1 clusters (those cuBLASLt refuses
// are dropped).
Gemm plan(cublasLtHandle_t h, const Shape& s, int sm_target, bool no_cluster, void* A, void* B, void* D, void* ws,
          size_t wsb, cudaStream_t st) {
  Gemm g{h, nullptr, nullptr, nullptr, nullptr, {}, s, A, B, D, ws, wsb};
  CK(cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = s.ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = s.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  CK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (sm_target > 0)
    CK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sm_target, sizeof sm_target));
  CK(cublasLtMatrixLayoutCreate(&g.a, CUDA_R_16BF, s.ta ? s.k : s.m, s.ta ? s.m : s.k, s.ta ? s.k : s.m));
  CK(cublasLtMatrixLayoutCreate(&g.b, CUDA_R_16BF, s.tb ? s.n : s.k, s.tb ? s.k : s.n, s.tb ? s.n : s.k));
  CK(cublasLtMatrixLayoutCreate(&g.d, s.fp32_accumulate ? CUDA_R_32F : CUDA_R_16BF, s.m, s.n, s.m));
  cublasLtMatmulPreference_t pref;
  CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
  cublasLtMatmulHeuristicResult_t res[8];
  int got = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(h, g.desc, g.a, g.b, g.d, g.d, pref, 8, res, &got));
  if (got == 0) {
    std::printf("%s: no algorithm\n", s.name);
    std::exit(1);
  }
  float best = 1e30f;
  for (int i = 0; i < got; ++i) {
    if (no_cluster) {
      const std::uint16_t one = CUBLASLT_CLUSTER_SHAPE_1x1x1;
      CK(cublasLtMatmulAlgoConfigSetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &one, sizeof one));
      cublasLtMatmulHeuristicResult_t check{};
      if (cublasLtMatmulAlgoCheck(h, g.desc, g.a, g.b, g.d, g.d, &res[i].algo, &check) != CUBLAS_STATUS_SUCCESS) continue;
      if (check.workspaceSize > wsb) continue;
    }
    const float us = time_loop(g, st, 5, &res[i].algo);
    if (us < best) best = us, g.algo = res[i].algo;
  }
  if (best == 1e30f) {
    std::printf("%s: no candidate runs with 1x1x1 clusters\n", s.name);
    std::exit(1);
  }
  return g;
}

int main(int argc, char** argv) {
  std::vector<int> holds;
  for (int i = 1; i < argc; ++i) holds.push_back(std::atoi(argv[i]));
  if (holds.empty()) holds = {8, 16, 32};
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaFuncSetAttribute(hog, cudaFuncAttributeMaxDynamicSharedMemorySize, kHogSmem));

  const int N = 16384, C = 768, V = 50304;
  // As src/train/matmul.cpp maps them: dW (C_in x C_out col-major) += inp dout^T;
  // dinp (C_in x N) = W dout.
  const Shape shapes[] = {
      {"qkv dW    768x2304x16384", false, true, C, 3 * C, N, true},
      {"qkv dinp  768x16384x2304", false, false, C, N, 3 * C, false},
      {"proj dW   768x768x16384", false, true, C, C, N, true},
      {"proj dinp 768x16384x768", false, false, C, N, C, false},
      {"fc dW     768x3072x16384", false, true, C, 4 * C, N, true},
      {"fc dinp   768x16384x3072", false, false, C, N, 4 * C, false},
      {"fcp dW    3072x768x16384", false, true, 4 * C, C, N, true},
      {"fcp dinp  3072x16384x768", false, false, 4 * C, N, C, false},
      {"head dW   768x50304x16384", false, true, C, V, N, true},
  };
  size_t most = (size_t)V * N;  // elements of the largest operand
  void *A, *B, *D, *ws;
  const size_t wsb = 32 << 20;
  CK(cudaMalloc(&A, most * 2));
  CK(cudaMalloc(&B, most * 2));
  CK(cudaMalloc(&D, (size_t)V * C * 4 + (size_t)4 * C * N * 2));
  CK(cudaMalloc(&ws, wsb));
  fill<<<1024, 256>>>((__nv_bfloat16*)A, most, 1);
  fill<<<1024, 256>>>((__nv_bfloat16*)B, most, 2);
  CK(cudaMemset(D, 0, (size_t)V * C * 4));
  cublasLtHandle_t h;
  CK(cublasLtCreate(&h));
  cudaStream_t work, side;
  CK(cudaStreamCreateWithFlags(&work, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  cudaStream_t control;
  CK(cudaStreamCreateWithFlags(&control, cudaStreamNonBlocking));
  int *stop, *started, *host_one;
  CK(cudaMalloc(&stop, sizeof(int)));
  CK(cudaHostAlloc(&started, sizeof(int), cudaHostAllocMapped));
  CK(cudaHostAlloc(&host_one, sizeof(int), 0));
  *host_one = 1;
  const char* hc = std::getenv("HOG_CLUSTER");
  const int hog_cluster = hc ? std::atoi(hc) : 1;
  auto hold = [&](int K) {
    CK(cudaMemsetAsync(stop, 0, sizeof(int), side));
    CK(cudaStreamSynchronize(side));
    *(volatile int*)started = 0;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3((K + hog_cluster - 1) / hog_cluster * hog_cluster);
    cfg.blockDim = dim3(128);
    cfg.dynamicSmemBytes = kHogSmem;
    cfg.stream = side;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = hog_cluster;
    attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = hog_cluster > 1 ? 1 : 0;
    CK(cudaLaunchKernelEx(&cfg, hog, (volatile int*)stop, started));
    while (*(volatile int*)started < (int)cfg.gridDim.x) {}
  };
  auto release = [&] {
    CK(cudaMemcpyAsync(stop, host_one, sizeof(int), cudaMemcpyHostToDevice, control));
    CK(cudaStreamSynchronize(side));
  };

  std::printf("%d SMs; µs per matmul (median of the loop); hog: K SMs held, clusters of %d\n", sms, hog_cluster);
  for (int K : holds) {
    std::printf("K=%d (target %d SMs)\n", K, sms - K);
    const char* cols[] = {"alone", "hog", "hog,tgt", "hog,1x1", "hog,t1", "alone,t1"};
    std::printf("  %-26s", "shape");
    for (const char* c : cols) std::printf(" %8s", c);
    std::printf("\n");
    double tot[6] = {};
    for (const Shape& s : shapes) {
      Gemm full = plan(h, s, 0, false, A, B, D, ws, wsb, work);
      Gemm part = plan(h, s, sms - K, false, A, B, D, ws, wsb, work);
      Gemm flat = plan(h, s, 0, true, A, B, D, ws, wsb, work);
      Gemm part_flat = plan(h, s, sms - K, true, A, B, D, ws, wsb, work);
      const int reps = 20;
      float t[6];
      t[0] = time_loop(full, work, reps);
      Gemm* held[] = {&full, &part, &flat, &part_flat};
      for (int v = 0; v < 4; ++v) {
        hold(K);
        t[1 + v] = time_loop(*held[v], work, reps);
        release();
      }
      t[5] = time_loop(part_flat, work, reps);
      std::printf("  %-26s", s.name);
      for (int i = 0; i < 6; ++i) std::printf(" %8.1f", t[i]), tot[i] += t[i];
      std::printf("\n");
    }
    std::printf("  %-26s", "sum");
    for (int i = 0; i < 6; ++i) std::printf(" %8.1f", tot[i]);
    std::printf("\n");
  }
  return 0;
}
