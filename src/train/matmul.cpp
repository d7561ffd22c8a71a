#include "train/matmul.h"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace gpuaccept::train {

struct Matmul::Plan {
  LtMatmulDesc desc{CUBLAS_COMPUTE_32F, CUDA_R_32F};
  std::unique_ptr<LtMatrixLayout> a, b, d;
  cublasLtMatmulAlgo_t algo{};                        // the one in use
  std::vector<cublasLtMatmulAlgo_t> candidates;      // heuristic's list, best guess first
  bool timed = false;                                 // candidates timed on the real data
};

namespace {

std::unique_ptr<LtMatrixLayout> layout(cudaDataType_t type, int rows, int cols, std::int64_t ld, int batch,
                                       std::int64_t stride) {
  auto l = std::make_unique<LtMatrixLayout>(type, rows, cols, ld);
  if (batch > 1) {
    const std::int32_t count = batch;
    GPUACCEPT_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    GPUACCEPT_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return l;
}

}  // namespace

Matmul::Matmul(std::size_t workspace_bytes, bool autotune) : workspace_(workspace_bytes), autotune_(autotune) {}
Matmul::~Matmul() = default;

Matmul::Plan* Matmul::plan(const GemmShape& s) {
  if (auto it = plans_.find(s.key()); it != plans_.end()) return it->second.get();  // may be nullptr: no algorithm
  auto p = std::make_unique<Plan>();
  const cublasOperation_t ta = s.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = s.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  p->desc.set(CUBLASLT_MATMUL_DESC_TRANSA, ta);
  p->desc.set(CUBLASLT_MATMUL_DESC_TRANSB, tb);
  switch (s.epilogue) {
    case Epilogue::None: break;
    case Epilogue::Bias: p->desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS); break;
    case Epilogue::GeluAuxBias: p->desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_GELU_AUX_BIAS); break;
    case Epilogue::DGelu: p->desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DGELU); break;
  }
  if (s.sm_target > 0) p->desc.set(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, static_cast<std::int32_t>(s.sm_target));
  if (s.epilogue == Epilogue::Bias || s.epilogue == Epilogue::GeluAuxBias)
    p->desc.set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, CUDA_R_16BF);
  if (s.epilogue == Epilogue::GeluAuxBias || s.epilogue == Epilogue::DGelu) {
    p->desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, static_cast<std::int64_t>(s.ldd));
    p->desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, CUDA_R_16BF);
  }
  // op(A) is m x k and op(B) is k x n: the stored matrices are their transposes when transposed.
  p->a = layout(CUDA_R_16BF, s.transa ? s.k : s.m, s.transa ? s.m : s.k, s.lda, s.batch, s.stride_a);
  p->b = layout(CUDA_R_16BF, s.transb ? s.n : s.k, s.transb ? s.k : s.n, s.ldb, s.batch, s.stride_b);
  p->d = layout(s.fp32_out ? CUDA_R_32F : CUDA_R_16BF, s.m, s.n, s.ldd, s.batch, s.stride_d);

  LtMatmulPreference pref;
  const std::uint64_t ws = workspace_.bytes();
  pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, ws);
  // Every buffer the model hands in is at least 16-byte aligned (channels are a multiple of 8).
  const std::uint32_t align = 16;
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align);
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align);
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align);
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align);
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int returned = 0;
  // A combination this cuBLASLt does not offer (an epilogue with that bias type, say) is
  // refused as unsupported or invalid: no algorithm, which supports() reports; other errors throw.
  const cublasStatus_t heuristic = cublasLtMatmulAlgoGetHeuristic(handle_, p->desc, *p->a, *p->b, *p->d, *p->d, pref,
                                                                   kCandidates, results, &returned);
  if (heuristic == CUBLAS_STATUS_NOT_SUPPORTED || heuristic == CUBLAS_STATUS_INVALID_VALUE)
    returned = 0;
  else
    GPUACCEPT_CUBLAS_CHECK(heuristic);
  for (int i = 0; i < returned; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
    if (s.sm_target > 0) {
      // Beside NCCL, clusters of CTAs find too few free SMs of one GPC together: one CTA
      // per cluster (tests/gpu/probes/carveout_probe.cu: only an algorithm both sized for
      // the SMs left and of 1x1x1 clusters kept its own speed beside a kernel holding SMs).
      const std::uint16_t one = CUBLASLT_CLUSTER_SHAPE_1x1x1;
      GPUACCEPT_CUBLAS_CHECK(cublasLtMatmulAlgoConfigSetAttribute(&results[i].algo,
                                                                  CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &one, sizeof one));
      cublasLtMatmulHeuristicResult_t checked{};
      if (cublasLtMatmulAlgoCheck(handle_, p->desc, *p->a, *p->b, *p->d, *p->d, &results[i].algo, &checked) !=
              CUBLAS_STATUS_SUCCESS ||
          checked.workspaceSize > ws)
        continue;
    }
    p->candidates.push_back(results[i].algo);
  }
  auto& slot = plans_[s.key()];
  if (!p->candidates.empty()) {
    p->algo = p->candidates.front();
    slot = std::move(p);
  }
  return slot.get();
}

// The heuristic's first guess is not always the fastest for a given shape: at the shape's
// first call, each candidate runs a few times on the real operands and the fastest is kept
// (one stream synchronisation per shape, in the first training step, which the timings
// leave out). When D also accumulates into itself (gradients), the trials write into a
// scratch matrix instead, so the real result is computed exactly once, by the chosen one.
void Matmul::choose_algorithm(Plan& p, const GemmShape& s, const void* a, const void* b, void* d, const void* c,
                              cudaStream_t stream) {
  p.timed = true;
  if (p.candidates.size() < 2) return;
  const std::size_t d_elements = static_cast<std::size_t>(s.batch - 1) * s.stride_d + static_cast<std::size_t>(s.ldd) * s.n;
  const std::size_t d_bytes = d_elements * (s.fp32_out ? sizeof(float) : sizeof(bf16));
  void* out = d;
  const void* in = c ? c : d;
  if (s.accumulate && in == d) {  // not idempotent: trials go to scratch
    if (scratch_.bytes() < d_bytes) scratch_ = DeviceBuffer<char>(d_bytes);
    out = scratch_.get();
    in = scratch_.get();
  }
  const float alpha = 1.0f, beta = s.accumulate ? 1.0f : 0.0f;
  CudaEvent start, stop;
  float best_ms = 0;
  std::size_t best = 0;
  for (std::size_t i = 0; i < p.candidates.size(); ++i) {
    auto launch = [&] {
      return cublasLtMatmul(handle_, p.desc, &alpha, a, *p.a, b, *p.b, &beta, in, *p.d, out, *p.d, &p.candidates[i],
                            workspace_.get(), workspace_.bytes(), stream);
    };
    if (launch() != CUBLAS_STATUS_SUCCESS) continue;  // a candidate that refuses is skipped
    start.record(stream);
    for (int r = 0; r < kTrials; ++r) GPUACCEPT_CUBLAS_CHECK(launch());
    stop.record(stream);
    const float ms = stop.elapsed_ms_since(start);
    if (best_ms == 0 || ms < best_ms) best_ms = ms, best = i;
  }
  p.algo = p.candidates[best];
}

bool Matmul::supports(const GemmShape& s) { return plan(s) != nullptr; }

void Matmul::run(const GemmShape& shape, const void* a, const void* b, void* d, const bf16* bias, cudaStream_t stream,
                 const void* c, bf16* aux) {
  GemmShape s = shape;
  s.sm_target = sm_target_;
  Plan* p = plan(s);
  if (!p)
    throw std::runtime_error(fmt::format("cuBLASLt has no algorithm for the matmul m={} n={} k={} batch={} ({}{}{})",
                                         s.m, s.n, s.k, s.batch, s.transa ? "A^T" : "A", s.transb ? " B^T" : " B",
                                         s.fp32_out ? ", fp32 out" : ""));
  if (s.epilogue == Epilogue::Bias || s.epilogue == Epilogue::GeluAuxBias)
    p->desc.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  if (s.epilogue == Epilogue::GeluAuxBias || s.epilogue == Epilogue::DGelu)
    p->desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, static_cast<void*>(aux));
  if (!p->timed && autotune_) choose_algorithm(*p, s, a, b, d, c, stream);
  const float alpha = 1.0f, beta = s.accumulate ? 1.0f : 0.0f;
  const cublasStatus_t rc = cublasLtMatmul(handle_, p->desc, &alpha, a, *p->a, b, *p->b, &beta, c ? c : d, *p->d, d,
                                           *p->d, &p->algo, workspace_.get(), workspace_.bytes(), stream);
  if (rc != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format(
        "cublasLtMatmul failed: {} (m={} n={} k={} lda={} ldb={} ldd={} batch={} strides {}/{}/{} {}{} epilogue {} "
        "a={} b={} d={})",
        cublasLtGetStatusString(rc), s.m, s.n, s.k, s.lda, s.ldb, s.ldd, s.batch, s.stride_a, s.stride_b, s.stride_d,
        s.transa ? "A^T" : "A", s.transb ? " B^T" : " B", static_cast<int>(s.epilogue), a, b, static_cast<void*>(d)));
}

// Row-major out (N, OC) is column-major (OC x N): D = op(A) op(B) with A = W, which reads
// column-major as (C x OC), transposed; and B = inp, which reads column-major as (C x N).
GemmShape Matmul::forward_shape(int N, int C, int OC, Epilogue e, bool residual) {
  GemmShape s;
  s.transa = true;
  s.m = OC, s.n = N, s.k = C;
  s.lda = C, s.ldb = C, s.ldd = OC;
  s.epilogue = e;
  s.accumulate = residual;
  return s;
}

// dinp (C x N column-major) = W (C x OC) dout (OC x N).
GemmShape Matmul::backward_input_shape(int N, int C, int OC, Epilogue e) {
  GemmShape s;
  s.m = C, s.n = N, s.k = OC;
  s.lda = C, s.ldb = OC, s.ldd = C;
  s.epilogue = e;
  return s;
}

void Matmul::linear_forward(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias, int N, int C, int OC,
                            cudaStream_t stream, const bf16* residual) {
  run(forward_shape(N, C, OC, bias ? Epilogue::Bias : Epilogue::None, residual != nullptr), weight, inp, out, bias,
      stream, residual);
}

void Matmul::linear_forward_gelu(bf16* out, bf16* pre, const bf16* inp, const bf16* weight, const bf16* bias, int N,
                                 int C, int OC, cudaStream_t stream) {
  run(forward_shape(N, C, OC, Epilogue::GeluAuxBias, false), weight, inp, out, bias, stream, nullptr, pre);
}

void Matmul::linear_backward_input(bf16* dinp, const bf16* dout, const bf16* weight, int N, int C, int OC,
                                   cudaStream_t stream) {
  run(backward_input_shape(N, C, OC, Epilogue::None), weight, dout, dinp, nullptr, stream);
}

void Matmul::linear_backward_input_dgelu(bf16* dinp, const bf16* dout, const bf16* weight, const bf16* pre, int N,
                                         int C, int OC, cudaStream_t stream) {
  run(backward_input_shape(N, C, OC, Epilogue::DGelu), weight, dout, dinp, nullptr, stream, nullptr,
      const_cast<bf16*>(pre));
}

// dweight (C x OC column-major, i.e. row-major (OC, C)) (+)= inp (C x N) dout^T (N x OC).
void Matmul::linear_backward_weight(float* dweight, const bf16* dout, const bf16* inp, int N, int C, int OC,
                                    cudaStream_t stream, bool accumulate) {
  GemmShape s;
  s.transb = true;
  s.m = C, s.n = OC, s.k = N;
  s.lda = C, s.ldb = OC, s.ldd = C;
  s.fp32_out = true;
  s.accumulate = accumulate;
  run(s, inp, dout, dweight, nullptr, stream);
}

}  // namespace gpuaccept::train
