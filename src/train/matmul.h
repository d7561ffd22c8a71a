// The training phases' matmuls (ddp, fsdp-lora) through cuBLASLt: bf16 inputs, fp32 accumulation, bf16 or fp32
// output, an optional fused bias, optional accumulation into the output (gradients) and
// strided batches (attention heads). Descriptors and the chosen algorithm are cached per
// shape, so a training step pays the heuristic query once, not per call.
//
// Row-major helpers below spell out how a row-major product maps onto cuBLAS's
// column-major one (a row-major (R, C) matrix is a column-major (C, R) one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include <cuda_bf16.h>

#include "cuda/cublaslt_handles.h"
#include "cuda/cuda_handles.h"

namespace gpuaccept::train {

using bf16 = __nv_bfloat16;

// What cuBLASLt applies to the product before it is stored (its "epilogue").
enum class Epilogue {
  None,
  Bias,         // + a bf16 vector of m values, added to every column of D
  GeluAuxBias,  // D = gelu(product + bias); the pre-activation also stored to `aux` (for backward)
  DGelu,        // D = product * gelu'(aux): the GELU backward fused into the matmul
};

// D (m x n, column-major, leading dimension ldd) = epilogue(op(A) op(B) [+ C]).
struct GemmShape {
  bool transa = false, transb = false;
  int m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldd = 0;
  int batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;  // elements between batches
  bool fp32_out = false;    // D is fp32 (gradients), else bf16
  bool accumulate = false;  // + C (C has D's layout; D itself unless run() is given another C)
  Epilogue epilogue = Epilogue::None;
  int sm_target = 0;  // SMs the algorithm is chosen for (0: the device's); Matmul sets it
  auto key() const {
    return std::tuple(transa, transb, m, n, k, lda, ldb, ldd, batch, stride_a, stride_b, stride_d, fp32_out,
                      accumulate, epilogue, sm_target);
  }
};

class Matmul {
 public:
  // autotune: time the heuristic's candidates at each shape's first call (matmul.cpp).
  explicit Matmul(std::size_t workspace_bytes = std::size_t{32} << 20, bool autotune = true);
  ~Matmul();
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  // c: the C operand when accumulate is set (nullptr: D); aux: the epilogue's auxiliary
  // matrix (the pre-activation, with D's shape and leading dimension).
  void run(const GemmShape& s, const void* a, const void* b, void* d, const bf16* bias, cudaStream_t stream,
           const void* c = nullptr, bf16* aux = nullptr);
  // Whether cuBLASLt has an algorithm for the shape (plans it if so).
  bool supports(const GemmShape& s);

  // The SMs the next matmuls may count on (0: all of them). While NCCL's kernels hold some
  // SMs for an all-reduce, a cuBLASLt kernel sized for the whole GPU, in clusters of CTAs,
  // runs up to twice as long; one chosen for the SMs left (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET)
  // with one CTA per cluster keeps its speed there, and costs about 13% when nothing runs
  // beside it (tests/gpu/probes/carveout_probe.cu, docs/performance-history.md). Each target has
  // plans of its own.
  void set_sm_target(int sms) { sm_target_ = sms; }

  // out (N, OC) = inp (N, C) W^T [+ bias] [+ residual]     W (OC, C), as PyTorch's nn.Linear;
  // the residual (N, OC) is added by the matmul itself (its C operand).
  void linear_forward(bf16* out, const bf16* inp, const bf16* weight, const bf16* bias, int N, int C, int OC,
                      cudaStream_t stream, const bf16* residual = nullptr);
  // out = gelu(inp W^T + bias), pre = inp W^T + bias (kept for the backward pass).
  void linear_forward_gelu(bf16* out, bf16* pre, const bf16* inp, const bf16* weight, const bf16* bias, int N, int C,
                           int OC, cudaStream_t stream);
  // dinp (N, C) = dout (N, OC) W                      (overwrites)
  void linear_backward_input(bf16* dinp, const bf16* dout, const bf16* weight, int N, int C, int OC,
                             cudaStream_t stream);
  // dinp (N, C) = (dout W) * gelu'(pre), pre (N, C) the saved pre-activation.
  void linear_backward_input_dgelu(bf16* dinp, const bf16* dout, const bf16* weight, const bf16* pre, int N, int C,
                                   int OC, cudaStream_t stream);
  // The shapes the three fused calls above use, for supports().
  static GemmShape forward_shape(int N, int C, int OC, Epilogue e, bool residual);
  static GemmShape backward_input_shape(int N, int C, int OC, Epilogue e);
  // dweight (OC, C) += dout^T inp                     (fp32; accumulate = false: = instead of +=,
  //                                                   for a step's first micro-batch, with no zeroing before)
  void linear_backward_weight(float* dweight, const bf16* dout, const bf16* inp, int N, int C, int OC,
                              cudaStream_t stream, bool accumulate = true);

 private:
  struct Plan;
  static constexpr int kCandidates = 8;  // heuristic results considered per shape
  static constexpr int kTrials = 3;      // timed runs of each
  Plan* plan(const GemmShape& s);  // nullptr when cuBLASLt has no algorithm
  void choose_algorithm(Plan& p, const GemmShape& s, const void* a, const void* b, void* d, const void* c,
                        cudaStream_t stream);

  CublasLtHandle handle_;
  DeviceBuffer<char> workspace_;
  bool autotune_;
  int sm_target_ = 0;
  DeviceBuffer<char> scratch_;  // trial output for matmuls that accumulate into D
  std::map<decltype(GemmShape{}.key()), std::unique_ptr<Plan>> plans_;
};

}  // namespace gpuaccept::train
