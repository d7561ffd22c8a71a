// matmul_search_probe: does cuBLASLt hold a faster algorithm for ddp's products than the ones
// its heuristic offers (a diagnostic, not part of a phase)? Every product a GPT-2 124M step
// runs at micro-batch 16 x 1024 (N = 16384 rows, C = 768, the tied head's 50,304 columns), in
// cuBLAS's column-major terms of src/train/matmul.cpp, with its epilogue, its accumulation (the
// residual into a forward's output, the fp32 weight gradients into themselves) and, for the
// MLP's epilogues, without them for scale. For each product:
//   1. the heuristic's 8 candidates (what Matmul times), each the median of 20 runs;
//   2. with an epilogue, the plain product's 8 candidates given it, where they accept it
//      (whether Matmul should time them too: at ddp's shapes they gained nothing, see
//      docs/performance.md);
//   3. every configuration cuBLASLt accepts (cublasLtMatmulAlgoCheck) over every algorithm id
//      for the product's types (bf16 in, fp32 compute, bf16 or fp32 out): its tiles, stages,
//      CTA swizzle, custom options and cluster shapes; split-K off, except for the products
//      whose k dwarfs their output (the weight gradients, the head's input gradient), which
//      also try 2-32 splits with each reduction the algorithm offers. Each configuration runs
//      once to screen (at most kScreenSeconds a product, the heuristic's algorithm id first);
//      the 8 fastest are timed as the heuristic's were, and the fastest one's D is compared
//      with the heuristic's first (largest difference against the largest magnitude: another
//      order of the same sums).
// With --hot, the heuristic's candidates are also timed at the GPU's power cap, as a training
// step runs them: after half a second of back-to-back runs, in turns (7 rounds, each candidate
// a burst of about 25 ms, no synchronisation inside a round), the median of each one's bursts.
// A product timed alone on a GPU that was idle runs at up to the top clock; under ddp's step
// the board holds its 700 W limit (docs/performance.md, session 5), so a candidate that is
// faster cold but draws more power can be slower there. A diagnostic: Matmul still tunes cold,
// because tuning it this way made ddp's step 1.7% slower (docs/performance.md, session 6).
// One line a result; "heuristic <case> best", "hot <case> best", "search <case> best" and, at
// the end, one "step" line a product (its time a step, at the heuristic's best and at the
// search's; with --hot, at the cold choice and the hot one, both timed hot) say what was found.
//   built by tests/gpu/CMakeLists.txt; run as `matmul-search-probe [--no-search] [--hot] [names...]`:
//   names keep the products whose name contains one of them (all of them when none).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "probe_common.cuh"

namespace {

constexpr double kScreenSeconds = 25;  // each product's screening, at most

// One product: D (m x n) = op(A) (m x k) op(B) (k x n) [+ D], column-major, laid out as
// Matmul::forward_shape (transa, A stored k x m), backward_input_shape (A stored m x k) and
// linear_backward_weight (transb, B stored n x k, D fp32 and accumulating) lay them out.
struct Case {
  const char* name;
  int per_step;  // how many a step runs (a layer's: 12)
  bool transa, transb;
  int m, n, k;
  cublasLtEpilogue_t epilogue;
  bool fp32_out = false;
  bool accumulate = false;  // beta 1: the residual (forward) or the gradient (weights)
  bool split_k = false;     // search 2-32 splits of k as well
};

bool uses_bias(cublasLtEpilogue_t e) { return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS; }
bool uses_aux(cublasLtEpilogue_t e) { return e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU; }
size_t out_bytes(const Case& c) { return static_cast<size_t>(c.m) * c.n * (c.fp32_out ? 4 : 2); }

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
  std::snprintf(out, size, "algo %d tile %u stages %u swizzle %u custom %u cluster %u splitk %d reduction %u",
                config<int32_t>(a, CUBLASLT_ALGO_CONFIG_ID), config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_TILE_ID),
                config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
                config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION),
                static_cast<unsigned>(config<uint16_t>(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID)),
                config<int32_t>(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                config<uint32_t>(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME));
}

struct Buffers {
  __nv_bfloat16 *a, *b, *aux, *bias;
  void *d, *d_ref;
  void* ws;
  size_t ws_bytes;
};

struct Problem {
  cublasLtHandle_t h;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, ld;
  const Buffers* buf;
  float beta;

  cublasStatus_t run(const cublasLtMatmulAlgo_t& algo, void* d) const {
    const float alpha = 1;
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
  // D of one run from zero (an accumulating product adds to what D held).
  void result(const cublasLtMatmulAlgo_t& algo, void* d, size_t bytes) const {
    CK(cudaMemset(d, 0, bytes));
    CK(run(algo, d));
    CK(cudaDeviceSynchronize());
  }
};

struct Timed {
  cublasLtMatmulAlgo_t algo;
  float ms;
};

// Each candidate's time a run at the power cap (ms; < 0 where it refused, as cold_ms says):
// half a second of the first runnable candidate back to back, then kHotRounds rounds in which
// every candidate runs a burst of about kBurstMs in turn, the bursts timed by events and
// synchronised once a round; the median of each candidate's bursts, divided by its length.
constexpr int kHotRounds = 7;
constexpr float kBurstMs = 25, kSoakMs = 500;
std::vector<float> hot_ms(const Problem& p, const cublasLtMatmulHeuristicResult_t* results,
                          const std::vector<float>& cold_ms) {
  const int n = static_cast<int>(cold_ms.size());
  std::vector<float> hot(n, -1);
  int first = 0;
  while (first < n && cold_ms[first] <= 0) ++first;
  if (first == n) return hot;
  for (int r = 0; r < static_cast<int>(kSoakMs / cold_ms[first]) + 1; ++r) CK(p.run(results[first].algo, p.buf->d));
  std::vector<int> burst(n);
  for (int i = 0; i < n; ++i) burst[i] = cold_ms[i] > 0 ? std::max(1, static_cast<int>(kBurstMs / cold_ms[i])) : 0;
  std::vector<cudaEvent_t> events(2 * n);
  for (cudaEvent_t& e : events) CK(cudaEventCreate(&e));
  std::vector<std::vector<float>> per_run(n);
  for (int round = 0; round < kHotRounds; ++round) {
    for (int i = 0; i < n; ++i) {
      if (burst[i] == 0) continue;
      CK(cudaEventRecord(events[2 * i]));
      for (int r = 0; r < burst[i]; ++r) CK(p.run(results[i].algo, p.buf->d));
      CK(cudaEventRecord(events[2 * i + 1]));
    }
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < n; ++i) {
      if (burst[i] == 0) continue;
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]));
      per_run[i].push_back(ms / burst[i]);
    }
  }
  for (cudaEvent_t e : events) CK(cudaEventDestroy(e));
  for (int i = 0; i < n; ++i) {
    if (per_run[i].empty()) continue;
    std::sort(per_run[i].begin(), per_run[i].end());
    hot[i] = per_run[i][per_run[i].size() / 2];
  }
  return hot;
}

std::vector<double> host_values(const void* d, size_t count, bool fp32) {
  std::vector<double> v(count);
  if (fp32) {
    std::vector<float> h(count);
    CK(cudaMemcpy(h.data(), d, count * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) v[i] = h[i];
  } else {
    std::vector<__nv_bfloat16> h(count);
    CK(cudaMemcpy(h.data(), d, count * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) v[i] = __bfloat162float(h[i]);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  bool search = true, hot = false;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-search") == 0)
      search = false;
    else if (std::strcmp(argv[i], "--hot") == 0)
      hot = true;
    else
      only.emplace_back(argv[i]);
  }
  const int N = 16384, C = 768, V = 50304, L = 12;
  const auto E = CUBLASLT_EPILOGUE_DEFAULT;
  // name, per step, transa, transb, m, n, k, epilogue, fp32 out, accumulate, split-K
  const Case cases[] = {
      // forward: out (N, OC) = inp (N, IC) W^T [+ bias] [+ residual]: m = OC, n = N, k = IC
      {"qkv_forward_bias", L, true, false, 3 * C, N, C, CUBLASLT_EPILOGUE_BIAS},
      {"attproj_forward_bias_residual", L, true, false, C, N, C, CUBLASLT_EPILOGUE_BIAS, false, true},
      {"fc_forward_gelu_aux_bias", L, true, false, 4 * C, N, C, CUBLASLT_EPILOGUE_GELU_AUX_BIAS},
      {"fc_forward_bias", 0, true, false, 4 * C, N, C, CUBLASLT_EPILOGUE_BIAS},
      {"fc_forward_plain", 0, true, false, 4 * C, N, C, E},
      {"fcproj_forward_bias_residual", L, true, false, C, N, 4 * C, CUBLASLT_EPILOGUE_BIAS, false, true},
      {"head_forward", 1, true, false, V, N, C, E},
      // input gradients: dinp (N, IC) = dout (N, OC) W: m = IC, n = N, k = OC
      {"head_dinp", 1, false, false, C, N, V, E, false, false, true},
      {"fcproj_dinp_dgelu", L, false, false, 4 * C, N, C, CUBLASLT_EPILOGUE_DGELU},
      {"fcproj_dinp_plain", 0, false, false, 4 * C, N, C, E},
      {"fc_dinp", L, false, false, C, N, 4 * C, E},
      {"attproj_dinp", L, false, false, C, N, C, E},
      {"qkv_dinp", L, false, false, C, N, 3 * C, E},
      // weight gradients: dW (OC, IC) += dout^T inp, fp32: m = IC, n = OC, k = N
      {"head_dweight", 1, false, true, C, V, N, E, true, true, true},
      {"fcproj_dweight", L, false, true, 4 * C, C, N, E, true, true, true},
      {"fc_dweight", L, false, true, C, 4 * C, N, E, true, true, true},
      {"attproj_dweight", L, false, true, C, C, N, E, true, true, true},
      {"qkv_dweight", L, false, true, C, 3 * C, N, E, true, true, true},
  };
  auto wanted = [&](const Case& c) {
    if (only.empty()) return true;
    for (const std::string& o : only)
      if (std::strstr(c.name, o.c_str())) return true;
    return false;
  };
  size_t a_elems = 0, b_elems = 0, d_bytes = 0, aux_elems = 0;
  for (const Case& c : cases) {
    a_elems = std::max(a_elems, static_cast<size_t>(c.m) * c.k);
    b_elems = std::max(b_elems, static_cast<size_t>(c.k) * c.n);
    d_bytes = std::max(d_bytes, out_bytes(c));
    if (uses_aux(c.epilogue)) aux_elems = std::max(aux_elems, static_cast<size_t>(c.m) * c.n);
  }
  cublasLtHandle_t h;
  CK(cublasLtCreate(&h));
  Buffers buf{};
  buf.ws_bytes = size_t{32} << 20;  // Matmul's workspace
  CK(cudaMalloc(&buf.ws, buf.ws_bytes));
  CK(cudaMalloc(&buf.a, sizeof(__nv_bfloat16) * a_elems));
  CK(cudaMalloc(&buf.b, sizeof(__nv_bfloat16) * b_elems));
  CK(cudaMalloc(&buf.d, d_bytes));
  CK(cudaMalloc(&buf.d_ref, d_bytes));
  CK(cudaMalloc(&buf.aux, sizeof(__nv_bfloat16) * aux_elems));
  CK(cudaMalloc(&buf.bias, sizeof(__nv_bfloat16) * V));
  fill<<<1024, 256>>>(buf.a, a_elems, 1, 0.05f);
  fill<<<1024, 256>>>(buf.b, b_elems, 2, 1.f);
  fill<<<1024, 256>>>(buf.aux, aux_elems, 3, 3.f);
  fill<<<1024, 256>>>(buf.bias, V, 4, 0.1f);
  CK(cudaMemset(buf.d, 0, d_bytes));
  CK(cudaDeviceSynchronize());

  struct StepLine {
    const char* name;
    int per_step;
    float heuristic_ms, search_ms;
    float hot_cold_choice_ms = -1, hot_best_ms = -1;  // --hot: the cold choice and the hot one, timed hot
  };
  std::vector<StepLine> step_lines;
  for (const Case& c : cases) {
    if (!wanted(c)) continue;
    const cudaDataType_t dtype = c.fp32_out ? CUDA_R_32F : CUDA_R_16BF;
    Problem p{h, nullptr, nullptr, nullptr, nullptr, &buf, c.accumulate ? 1.f : 0.f};
    CK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = c.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = c.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    CK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
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
    CK(cublasLtMatrixLayoutCreate(&p.lb, CUDA_R_16BF, c.transb ? c.n : c.k, c.transb ? c.k : c.n, c.transb ? c.n : c.k));
    CK(cublasLtMatrixLayoutCreate(&p.ld, dtype, c.m, c.n, c.m));
    const double flop = 2.0 * c.m * c.n * static_cast<double>(c.k);
    auto tflops = [&](float ms) { return flop / (ms * 1e-3) / 1e12; };
    std::printf("case %s: m %d n %d k %d%s%s%s, %d a step\n", c.name, c.m, c.n, c.k, c.transa ? " A^T" : "",
                c.transb ? " B^T" : "", c.fp32_out ? " fp32 out, accumulating" : (c.accumulate ? " + residual" : ""),
                c.per_step);

    // 1. The heuristic's candidates, as Matmul asks for them.
    cublasLtMatmulPreference_t pref;
    CK(cublasLtMatmulPreferenceCreate(&pref));
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &buf.ws_bytes,
                                            sizeof buf.ws_bytes));
    cublasLtMatmulHeuristicResult_t results[8] = {};
    int returned = 0;
    CK(cublasLtMatmulAlgoGetHeuristic(h, p.desc, p.la, p.lb, p.ld, p.ld, pref, 8, results, &returned));
    Timed heuristic_best{{}, -1};
    int heuristic_best_index = -1;
    std::vector<float> cold(returned);
    char text[256];
    for (int i = 0; i < returned; ++i) {
      const float ms = cold[i] = p.time(results[i].algo, 20);
      describe(text, sizeof text, results[i].algo);
      std::printf("heuristic %s candidate %d: %.1f us (%.0f TFLOP/s) %s\n", c.name, i, ms * 1e3, tflops(ms), text);
      if (ms > 0 && (heuristic_best.ms < 0 || ms < heuristic_best.ms))
        heuristic_best = {results[i].algo, ms}, heuristic_best_index = i;
    }
    if (heuristic_best.ms < 0) {
      std::printf("heuristic %s: no candidate ran\n", c.name);
      continue;
    }
    describe(text, sizeof text, heuristic_best.algo);
    std::printf("heuristic %s best %.1f us (%.0f TFLOP/s) %s\n", c.name, heuristic_best.ms * 1e3,
                tflops(heuristic_best.ms), text);
    float hot_cold_choice = -1, hot_best = -1;
    if (hot) {  // 1b. The same candidates at the power cap.
      const std::vector<float> at_cap = hot_ms(p, results, cold);
      int best_hot = -1;
      for (int i = 0; i < returned; ++i) {
        if (at_cap[i] <= 0) continue;
        std::printf("hot %s candidate %d: %.1f us (%.0f TFLOP/s), cold %.1f us\n", c.name, i, at_cap[i] * 1e3,
                    tflops(at_cap[i]), cold[i] * 1e3);
        if (best_hot < 0 || at_cap[i] < at_cap[best_hot]) best_hot = i;
      }
      hot_cold_choice = at_cap[heuristic_best_index];
      hot_best = at_cap[best_hot];
      std::printf("hot %s best: candidate %d, %.1f us; the cold best (candidate %d) %.1f us hot: %.3fx\n", c.name,
                  best_hot, hot_best * 1e3, heuristic_best_index, hot_cold_choice * 1e3, hot_cold_choice / hot_best);
    }
    CK(results[0].state);
    p.result(results[0].algo, buf.d_ref, out_bytes(c));

    // 2. The plain product's candidates, given this epilogue where they accept it.
    if (c.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
      cublasLtMatmulDesc_t plain;
      CK(cublasLtMatmulDescCreate(&plain, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      CK(cublasLtMatmulDescSetAttribute(plain, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
      CK(cublasLtMatmulDescSetAttribute(plain, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
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
      step_lines.push_back({c.name, c.per_step, heuristic_best.ms, -1, hot_cold_choice, hot_best});
      CK(cublasLtMatmulPreferenceDestroy(pref));
      continue;
    }
    int ids[256];
    int id_count = 0;
    CK(cublasLtMatmulAlgoGetIds(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, dtype, dtype, 256, ids,
                                &id_count));
    // The heuristic's own algorithm first: a screening cut short by its time limit has then seen
    // the likeliest winners (the head's products, 1.6 ms a run, reach only a few ids).
    std::stable_partition(ids, ids + id_count, [&](int id) {
      return id == config<int32_t>(heuristic_best.algo, CUBLASLT_ALGO_CONFIG_ID);
    });
    const uint16_t clusters[] = {CUBLASLT_CLUSTER_SHAPE_AUTO,  CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1,
                                 CUBLASLT_CLUSTER_SHAPE_1x2x1, CUBLASLT_CLUSTER_SHAPE_2x2x1, CUBLASLT_CLUSTER_SHAPE_4x1x1,
                                 CUBLASLT_CLUSTER_SHAPE_1x4x1};
    const int32_t splits[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
    const uint32_t reductions[] = {CUBLASLT_REDUCTION_SCHEME_INPLACE, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
                                   CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE};
    std::vector<Timed> screened;
    long checked = 0, accepted = 0;
    bool cut_short = false;
    const auto screen_start = std::chrono::steady_clock::now();
    auto try_config = [&](const cublasLtMatmulAlgo_t& cfg) {
      ++checked;
      cublasLtMatmulHeuristicResult_t r{};
      if (cublasLtMatmulAlgoCheck(h, p.desc, p.la, p.lb, p.ld, p.ld, &cfg, &r) != CUBLAS_STATUS_SUCCESS ||
          r.workspaceSize > buf.ws_bytes)
        return;
      ++accepted;
      const float ms = p.time(cfg, 1);
      if (ms > 0) screened.push_back({cfg, ms});
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - screen_start).count() > kScreenSeconds)
        cut_short = true;
    };
    for (int a = 0; a < id_count && !cut_short; ++a) {
      cublasLtMatmulAlgo_t algo;
      if (cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, dtype, dtype, ids[a],
                                 &algo) != CUBLAS_STATUS_SUCCESS)
        continue;
      const auto mask = cap_value<uint32_t>(algo, CUBLASLT_ALGO_CAP_EPILOGUE_MASK);
      if ((mask & static_cast<uint32_t>(c.epilogue)) != static_cast<uint32_t>(c.epilogue)) continue;
      std::vector<uint32_t> tiles = cap_list<uint32_t>(algo, CUBLASLT_ALGO_CAP_TILE_IDS);
      std::vector<uint32_t> stages = cap_list<uint32_t>(algo, CUBLASLT_ALGO_CAP_STAGES_IDS);
      if (tiles.empty()) tiles.push_back(CUBLASLT_MATMUL_TILE_UNDEFINED);
      if (stages.empty()) stages.push_back(CUBLASLT_MATMUL_STAGES_UNDEFINED);
      const uint32_t swizzles = cap_value<uint32_t>(algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT) ? 2 : 1;
      const int32_t custom_max = cap_value<int32_t>(algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX);
      const bool can_split = c.split_k && cap_value<int32_t>(algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT) != 0;
      const uint32_t reduction_mask = cap_value<uint32_t>(algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK);
      for (uint32_t tile : tiles)
        for (uint32_t stage : stages)
          for (uint32_t swizzle = 0; swizzle < swizzles; ++swizzle)
            for (int32_t custom = 0; custom <= custom_max; ++custom)
              for (uint16_t cluster : clusters)
                for (int32_t split : splits) {
                  if (split > 1 && !can_split) break;
                  for (uint32_t reduction : reductions) {
                    if (cut_short) break;
                    if (split == 1 && reduction != reductions[0]) break;  // no reduction to choose
                    if (split > 1 && !(reduction_mask & reduction)) continue;
                    cublasLtMatmulAlgo_t cfg = algo;
                    const uint32_t none = CUBLASLT_REDUCTION_SCHEME_NONE;
                    CK(cublasLtMatmulAlgoConfigSetAttribute(&cfg, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile));
                    CK(cublasLtMatmulAlgoConfigSetAttribute(&cfg, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stage, sizeof stage));
                    CK(cublasLtMatmulAlgoConfigSetAttribute(&cfg, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle,
                                                            sizeof swizzle));
                    CK(cublasLtMatmulAlgoConfigSetAttribute(&cfg, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom,
                                                            sizeof custom));
                    CK(cublasLtMatmulAlgoConfigSetAttribute(&cfg, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof split));
                    CK(cublasLtMatmulAlgoConfigSetAttribute(&cfg, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                            split > 1 ? &reduction : &none, sizeof reduction));
                    if (cublasLtMatmulAlgoConfigSetAttribute(&cfg, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                                             sizeof cluster) != CUBLAS_STATUS_SUCCESS)
                      continue;
                    try_config(cfg);
                  }
                }
    }
    std::sort(screened.begin(), screened.end(), [](const Timed& x, const Timed& y) { return x.ms < y.ms; });
    std::printf("search %s: %d algorithm ids, %ld configurations tried, %ld accepted, %zu ran%s\n", c.name, id_count,
                checked, accepted, screened.size(), cut_short ? " (cut short at the screening's time limit)" : "");
    Timed best{{}, -1};
    for (size_t i = 0; i < screened.size() && i < 8; ++i) {
      const float ms = p.time(screened[i].algo, 20);
      describe(text, sizeof text, screened[i].algo);
      std::printf("search %s top %zu: %.1f us (%.0f TFLOP/s) %s\n", c.name, i, ms * 1e3, tflops(ms), text);
      if (ms > 0 && (best.ms < 0 || ms < best.ms)) best = {screened[i].algo, ms};
    }
    if (best.ms > 0) {
      p.result(best.algo, buf.d, out_bytes(c));
      const size_t count = static_cast<size_t>(c.m) * c.n;
      const std::vector<double> got = host_values(buf.d, count, c.fp32_out), ref = host_values(buf.d_ref, count, c.fp32_out);
      double diff = 0, mag = 0;
      for (size_t i = 0; i < count; ++i) {
        diff = std::max(diff, std::fabs(got[i] - ref[i]));
        mag = std::max(mag, std::fabs(ref[i]));
      }
      describe(text, sizeof text, best.algo);
      std::printf("search %s best %.1f us (%.0f TFLOP/s), %.3fx the heuristic's best; D against the heuristic's "
                  "first: largest difference %.3g of largest magnitude %.3g; %s\n",
                  c.name, best.ms * 1e3, tflops(best.ms), heuristic_best.ms / best.ms, diff, mag, text);
    }
    step_lines.push_back({c.name, c.per_step, heuristic_best.ms, best.ms, hot_cold_choice, hot_best});
    CK(cublasLtMatmulPreferenceDestroy(pref));
    CK(cublasLtMatrixLayoutDestroy(p.la));
    CK(cublasLtMatrixLayoutDestroy(p.lb));
    CK(cublasLtMatrixLayoutDestroy(p.ld));
    CK(cublasLtMatmulDescDestroy(p.desc));
  }
  // A step's share of each product the step runs: what the whole search would take off it.
  double step_heuristic = 0, step_search = 0, step_hot_cold = 0, step_hot = 0;
  for (const StepLine& s : step_lines) {
    if (s.per_step == 0) continue;
    if (s.hot_best_ms > 0) {
      std::printf("step %s hot: %d x %.1f us = %.3f ms at the cold choice, %.3f ms at the hot one\n", s.name, s.per_step,
                  s.hot_cold_choice_ms * 1e3, s.per_step * s.hot_cold_choice_ms, s.per_step * s.hot_best_ms);
      step_hot_cold += s.per_step * s.hot_cold_choice_ms;
      step_hot += s.per_step * s.hot_best_ms;
    }
    const double best = s.search_ms > 0 ? std::min(s.search_ms, s.heuristic_ms) : s.heuristic_ms;
    std::printf("step %s: %d x %.1f us = %.3f ms at the heuristic's best, %.3f ms at the search's\n", s.name,
                s.per_step, s.heuristic_ms * 1e3, s.per_step * s.heuristic_ms, s.per_step * best);
    step_heuristic += s.per_step * s.heuristic_ms;
    step_search += s.per_step * best;
  }
  std::printf("step total: %.3f ms at the heuristic's best, %.3f ms at the search's\n", step_heuristic, step_search);
  if (hot) std::printf("step total hot: %.3f ms at the cold choices, %.3f ms at the hot ones\n", step_hot_cold, step_hot);
  return 0;
}
