// matmul_search_probe: does cuBLASLt hold a faster algorithm for ddp's MLP products than the
// ones its heuristic offers (a diagnostic, not part of a phase)? The fc forward with the GELU
// epilogue and the fc projection's input gradient with the DGELU epilogue ran at 447 and 460
// TFLOP/s in ddp's kernel profile, against about 790 for the plain tied-head products
// (docs/performance.md). For each product at GPT-2 124M's shape, micro-batch 16 x 1024
// (N = 16384 rows, C = 768; cuBLAS's column-major terms of src/train/matmul.cpp), with its
// epilogue and, for scale, without; and the other forward products with the bias epilogue (the
// qkv, attention and fc projections):
//   1. the heuristic's 8 candidates (what Matmul times), each the median of 20 runs;
//   2. with an epilogue, the plain product's 8 candidates given it, where they accept it
//      (whether Matmul should time them too: at ddp's shapes they gained nothing, see
//      docs/performance.md);
//   3. every configuration cuBLASLt accepts (cublasLtMatmulAlgoCheck) over every algorithm id
//      for bf16 in and out with fp32 compute: its tiles, stages, CTA swizzle, custom options
//      and cluster shapes, split-K off. Each runs once to screen; the 8 fastest are timed as
//      the heuristic's were, and the fastest one's D is compared with the heuristic's first
//      (largest difference against the largest magnitude: another order of the same sums).
// One line a result; "search <case> best ..." and "heuristic <case> best ..." say what was found.
//   built by tests/gpu/CMakeLists.txt; run as `matmul-search-probe [N]`, or `--no-search` for
//   1 and 2 alone (the search takes about 80 s on an H200, mostly the plain products' checks).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "probe_common.cuh"

namespace {

// One product: D (m x n) = op(A) (m x k) B (k x n), column-major, as Matmul::forward_shape
// (transa, A stored k x m) and backward_input_shape (A stored m x k) lay them out.
struct Case {
  const char* name;
  bool transa;
  int m, n, k;
  cublasLtEpilogue_t epilogue;
};

bool uses_bias(cublasLtEpilogue_t e) { return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS; }
bool uses_aux(cublasLtEpilogue_t e) { return e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU; }

template <typename T>
std::vector<T> cap_list(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0)
    return {};
  std::vector<T> v(bytes / sizeof(T));
  CK(cublasLtMatmulAlgoCapGetAttribute(&algo, attr, v.data(), bytes, &bytes));
  return v;
}

template <typename T>
T cap_value(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  T v{};
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &v, sizeof v, &bytes) != CUBLAS_STATUS_SUCCESS) return T{};
  return v;
}

template <typename T>
T config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T v{};
  size_t bytes = 0;
  CK(cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof v, &bytes));
  return v;
}

void describe(char* out, size_t size, const cublasLtMatmulAlgo_t& a) {
  std::snprintf(out, size, "algo %d tile %u stages %u swizzle %u custom %u cluster %u",
                config<int32_t>(a, CUBLASLT_ALGO_CONFIG_ID), config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_TILE_ID),
                config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
                config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION),
                static_cast<unsigned>(config<uint16_t>(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID)));
}

struct Buffers {
  __nv_bfloat16 *a, *b, *d, *d_ref, *aux, *bias;
  void* ws;
  size_t ws_bytes;
};

struct Problem {
  cublasLtHandle_t h;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, ld;
  const Buffers* buf;

  cublasStatus_t run(const cublasLtMatmulAlgo_t& algo, __nv_bfloat16* d) const {
    const float alpha = 1, beta = 0;
    return cublasLtMatmul(h, desc, &alpha, buf->a, la, buf->b, lb, &beta, d, ld, d, ld, &algo, buf->ws, buf->ws_bytes,
                          0);
  }
  // The median of `reps` back-to-back runs (ms), after one warm-up; < 0 where it refuses.
  float time(const cublasLtMatmulAlgo_t& algo, int reps) const {
    if (run(algo, buf->d) != CUBLAS_STATUS_SUCCESS) {
      cudaGetLastError();
      return -1;
    }
    return median_ms([&] { return run(algo, buf->d); }, reps);
  }
};

struct Timed {
  cublasLtMatmulAlgo_t algo;
  float ms;
};

}  // namespace

int main(int argc, char** argv) {
  const bool search = !(argc > 1 && std::strcmp(argv[1], "--no-search") == 0);
  const int N = argc > 1 && search ? std::atoi(argv[1]) : 16384, C = 768;
  const Case cases[] = {
      {"fc_forward_gelu_aux_bias", true, 4 * C, N, C, CUBLASLT_EPILOGUE_GELU_AUX_BIAS},
      {"fc_forward_bias", true, 4 * C, N, C, CUBLASLT_EPILOGUE_BIAS},
      {"fc_forward_plain", true, 4 * C, N, C, CUBLASLT_EPILOGUE_DEFAULT},
      {"fcproj_dinp_dgelu", false, 4 * C, N, C, CUBLASLT_EPILOGUE_DGELU},
      {"fcproj_dinp_plain", false, 4 * C, N, C, CUBLASLT_EPILOGUE_DEFAULT},
      {"qkv_forward_bias", true, 3 * C, N, C, CUBLASLT_EPILOGUE_BIAS},
      {"attproj_forward_bias", true, C, N, C, CUBLASLT_EPILOGUE_BIAS},
      {"fcproj_forward_bias", true, C, N, 4 * C, CUBLASLT_EPILOGUE_BIAS},
  };
  cublasLtHandle_t h;
  CK(cublasLtCreate(&h));
  Buffers buf{};
  buf.ws_bytes = size_t{32} << 20;  // Matmul's workspace
  const size_t mn = static_cast<size_t>(4 * C) * N, kn = static_cast<size_t>(4 * C) * N, mk = static_cast<size_t>(4 * C) * C;
  CK(cudaMalloc(&buf.ws, buf.ws_bytes));
  CK(cudaMalloc(&buf.a, sizeof(__nv_bfloat16) * mk));
  CK(cudaMalloc(&buf.b, sizeof(__nv_bfloat16) * kn));
  CK(cudaMalloc(&buf.d, sizeof(__nv_bfloat16) * mn));
  CK(cudaMalloc(&buf.d_ref, sizeof(__nv_bfloat16) * mn));
  CK(cudaMalloc(&buf.aux, sizeof(__nv_bfloat16) * mn));
  CK(cudaMalloc(&buf.bias, sizeof(__nv_bfloat16) * 4 * C));
  fill<<<1024, 256>>>(buf.a, mk, 1, 0.05f);
  fill<<<1024, 256>>>(buf.b, kn, 2, 1.f);
  fill<<<1024, 256>>>(buf.aux, mn, 3, 3.f);
  fill<<<1024, 256>>>(buf.bias, 4 * C, 4, 0.1f);
  CK(cudaDeviceSynchronize());

  for (const Case& c : cases) {
    Problem p{h, nullptr, nullptr, nullptr, nullptr, &buf};
    CK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = c.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
    CK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &c.epilogue, sizeof c.epilogue));
    if (uses_bias(c.epilogue)) {
      const cudaDataType_t bt = CUDA_R_16BF;
      CK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
      CK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &buf.bias, sizeof buf.bias));
    }
    if (uses_aux(c.epilogue)) {
      const int64_t aux_ld = c.m;
      const cudaDataType_t at = CUDA_R_16BF;
      CK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld));
      CK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &at, sizeof at));
      CK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &buf.aux, sizeof buf.aux));
    }
    CK(cublasLtMatrixLayoutCreate(&p.la, CUDA_R_16BF, c.transa ? c.k : c.m, c.transa ? c.m : c.k, c.transa ? c.k : c.m));
    CK(cublasLtMatrixLayoutCreate(&p.lb, CUDA_R_16BF, c.k, c.n, c.k));
    CK(cublasLtMatrixLayoutCreate(&p.ld, CUDA_R_16BF, c.m, c.n, c.m));
    const double flop = 2.0 * c.m * c.n * static_cast<double>(c.k);
    auto tflops = [&](float ms) { return flop / (ms * 1e-3) / 1e12; };

    // 1. The heuristic's candidates, as Matmul asks for them.
    cublasLtMatmulPreference_t pref;
    CK(cublasLtMatmulPreferenceCreate(&pref));
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &buf.ws_bytes,
                                            sizeof buf.ws_bytes));
    cublasLtMatmulHeuristicResult_t results[8] = {};
    int returned = 0;
    CK(cublasLtMatmulAlgoGetHeuristic(h, p.desc, p.la, p.lb, p.ld, p.ld, pref, 8, results, &returned));
    Timed heuristic_best{{}, -1};
    char text[256];
    for (int i = 0; i < returned; ++i) {
      const float ms = p.time(results[i].algo, 20);
      describe(text, sizeof text, results[i].algo);
      std::printf("heuristic %s candidate %d: %.1f us (%.0f TFLOP/s) %s\n", c.name, i, ms * 1e3, tflops(ms), text);
      if (ms > 0 && (heuristic_best.ms < 0 || ms < heuristic_best.ms)) heuristic_best = {results[i].algo, ms};
    }
    if (heuristic_best.ms < 0) {
      std::printf("heuristic %s: no candidate ran\n", c.name);
      continue;
    }
    describe(text, sizeof text, heuristic_best.algo);
    std::printf("heuristic %s best %.1f us (%.0f TFLOP/s) %s\n", c.name, heuristic_best.ms * 1e3,
                tflops(heuristic_best.ms), text);
    CK(results[0].state);
    CK(p.run(results[0].algo, buf.d_ref));

    // 2. The plain product's candidates, given this epilogue where they accept it.
    if (c.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
      cublasLtMatmulDesc_t plain;
      CK(cublasLtMatmulDescCreate(&plain, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      CK(cublasLtMatmulDescSetAttribute(plain, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
      cublasLtMatmulHeuristicResult_t plain_results[8] = {};
      int plain_returned = 0;
      CK(cublasLtMatmulAlgoGetHeuristic(h, plain, p.la, p.lb, p.ld, p.ld, pref, 8, plain_results, &plain_returned));
      Timed plain_best{{}, -1};
      for (int i = 0; i < plain_returned; ++i) {
        cublasLtMatmulHeuristicResult_t r{};
        describe(text, sizeof text, plain_results[i].algo);
        if (cublasLtMatmulAlgoCheck(h, p.desc, p.la, p.lb, p.ld, p.ld, &plain_results[i].algo, &r) !=
            CUBLAS_STATUS_SUCCESS) {
          std::printf("plain %s candidate %d: refuses the epilogue, %s\n", c.name, i, text);
          continue;
        }
        const float ms = p.time(plain_results[i].algo, 20);
        std::printf("plain %s candidate %d: %.1f us (%.0f TFLOP/s) %s\n", c.name, i, ms * 1e3, tflops(ms), text);
        if (ms > 0 && (plain_best.ms < 0 || ms < plain_best.ms)) plain_best = {plain_results[i].algo, ms};
      }
      if (plain_best.ms > 0)
        std::printf("plain %s best %.1f us, %.3fx the heuristic's best\n", c.name, plain_best.ms * 1e3,
                    heuristic_best.ms / plain_best.ms);
      CK(cublasLtMatmulDescDestroy(plain));
    }

    // 3. Every configuration cuBLASLt accepts.
    if (!search) {
      CK(cublasLtMatmulPreferenceDestroy(pref));
      continue;
    }
    int ids[256];
    int id_count = 0;
    CK(cublasLtMatmulAlgoGetIds(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                                256, ids, &id_count));
    const uint16_t clusters[] = {CUBLASLT_CLUSTER_SHAPE_AUTO,  CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1,
                                 CUBLASLT_CLUSTER_SHAPE_1x2x1, CUBLASLT_CLUSTER_SHAPE_2x2x1, CUBLASLT_CLUSTER_SHAPE_4x1x1,
                                 CUBLASLT_CLUSTER_SHAPE_1x4x1};
    std::vector<Timed> screened;
    long checked = 0, accepted = 0;
    for (int a = 0; a < id_count; ++a) {
      cublasLtMatmulAlgo_t algo;
      if (cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                                 ids[a], &algo) != CUBLAS_STATUS_SUCCESS)
        continue;
      const auto mask = cap_value<uint32_t>(algo, CUBLASLT_ALGO_CAP_EPILOGUE_MASK);
      if ((mask & static_cast<uint32_t>(c.epilogue)) != static_cast<uint32_t>(c.epilogue)) continue;
      std::vector<uint32_t> tiles = cap_list<uint32_t>(algo, CUBLASLT_ALGO_CAP_TILE_IDS);
      std::vector<uint32_t> stages = cap_list<uint32_t>(algo, CUBLASLT_ALGO_CAP_STAGES_IDS);
      if (tiles.empty()) tiles.push_back(CUBLASLT_MATMUL_TILE_UNDEFINED);
      if (stages.empty()) stages.push_back(CUBLASLT_MATMUL_STAGES_UNDEFINED);
      const uint32_t swizzles = cap_value<uint32_t>(algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT) ? 2 : 1;
      const int32_t custom_max = cap_value<int32_t>(algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX);
      for (uint32_t tile : tiles)
        for (uint32_t stage : stages)
          for (uint32_t swizzle = 0; swizzle < swizzles; ++swizzle)
            for (int32_t custom = 0; custom <= custom_max; ++custom)
              for (uint16_t cluster : clusters) {
                cublasLtMatmulAlgo_t cfg = algo;
                const int32_t splitk = 1;
                CK(cublasLtMatmulAlgoConfigSetAttribute(&cfg, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile));
                CK(cublasLtMatmulAlgoConfigSetAttribute(&cfg, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stage, sizeof stage));
                CK(cublasLtMatmulAlgoConfigSetAttribute(&cfg, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle,
                                                        sizeof swizzle));
                CK(cublasLtMatmulAlgoConfigSetAttribute(&cfg, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom,
                                                        sizeof custom));
                CK(cublasLtMatmulAlgoConfigSetAttribute(&cfg, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk));
                if (cublasLtMatmulAlgoConfigSetAttribute(&cfg, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                                         sizeof cluster) != CUBLAS_STATUS_SUCCESS)
                  continue;
                ++checked;
                cublasLtMatmulHeuristicResult_t r{};
                if (cublasLtMatmulAlgoCheck(h, p.desc, p.la, p.lb, p.ld, p.ld, &cfg, &r) != CUBLAS_STATUS_SUCCESS ||
                    r.workspaceSize > buf.ws_bytes)
                  continue;
                ++accepted;
                const float ms = p.time(cfg, 1);
                if (ms > 0) screened.push_back({cfg, ms});
              }
    }
    std::sort(screened.begin(), screened.end(), [](const Timed& x, const Timed& y) { return x.ms < y.ms; });
    std::printf("search %s: %d algorithm ids, %ld configurations tried, %ld accepted, %zu ran\n", c.name, id_count,
                checked, accepted, screened.size());
    Timed best{{}, -1};
    for (size_t i = 0; i < screened.size() && i < 8; ++i) {
      const float ms = p.time(screened[i].algo, 20);
      describe(text, sizeof text, screened[i].algo);
      std::printf("search %s top %zu: %.1f us (%.0f TFLOP/s) %s\n", c.name, i, ms * 1e3, tflops(ms), text);
      if (ms > 0 && (best.ms < 0 || ms < best.ms)) best = {screened[i].algo, ms};
    }
    if (best.ms > 0) {
      CK(p.run(best.algo, buf.d));
      std::vector<__nv_bfloat16> got(mn), ref(mn);
      CK(cudaMemcpy(got.data(), buf.d, mn * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(ref.data(), buf.d_ref, mn * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));
      double diff = 0, mag = 0;
      for (size_t i = 0; i < mn; ++i) {
        const double g = __bfloat162float(got[i]), r = __bfloat162float(ref[i]);
        diff = std::max(diff, std::fabs(g - r));
        mag = std::max(mag, std::fabs(r));
      }
      describe(text, sizeof text, best.algo);
      std::printf("search %s best %.1f us (%.0f TFLOP/s), %.3fx the heuristic's best; D against the heuristic's "
                  "first: largest difference %.3g of largest magnitude %.3g; %s\n",
                  c.name, best.ms * 1e3, tflops(best.ms), heuristic_best.ms / best.ms, diff, mag, text);
    }
    CK(cublasLtMatmulPreferenceDestroy(pref));
    CK(cublasLtMatrixLayoutDestroy(p.la));
    CK(cublasLtMatrixLayoutDestroy(p.lb));
    CK(cublasLtMatrixLayoutDestroy(p.ld));
    CK(cublasLtMatmulDescDestroy(p.desc));
  }
  return 0;
}
