// The model's matmuls, written in row-major terms (kernels.h: RowMajorGemm) and run by
// cuBLASLt (src/train/matmul.h) or, where cuBLASLt has no algorithm for a shape or an operand
// is not 16-byte aligned, by naive_gemm (kernels.h). Every call site says what it computes as
// a row-major product; the one place that turns that into cuBLASLt's column-major call is
// column_major() below, which the test program checks on the host for every transposition.
//
// The mapping: a row-major (R, C) matrix with rows ld apart is, read column-major, the (C, R)
// matrix with columns ld apart, i.e. its transpose. So row-major D (M, N) = op(A) op(B) is
// column-major D^T (N x M) = op(B)^T op(A)^T: cuBLASLt's first operand is our B and its second
// our A, with m = N, n = M, and each operand transposed exactly when ours is (our B stored
// (K, N) row-major already reads as op(B)^T (N x K); stored (N, K) and used transposed, it
// reads as (K x N) and cuBLASLt must transpose it). The bias, m values added to every column
// of D^T, is added to every row of D.
#pragma once

#include <cstddef>

#include "fsdp-lora/gpu/kernels.h"
#include "train/matmul.h"

namespace gpuaccept::fsdp::gpu {

struct ColumnMajorCall {
  train::GemmShape shape;
  const void* a;  // cuBLASLt's A: our B
  const void* b;  // cuBLASLt's B: our A
};
ColumnMajorCall column_major(const RowMajorGemm& g);

class Gemm {
 public:
  // naive_only: every matmul through naive_gemm (a second implementation for the tests).
  // autotune: src/train/matmul.h's timing of cuBLASLt's candidates per shape.
  Gemm(bool naive_only, bool autotune);

  void run(const RowMajorGemm& g, cudaStream_t stream);

  // The three products of a linear layer y = x W^T (+ bias), W (out, in) as PyTorch stores it:
  // y (N, out) = x (N, in) W^T [+ bias] [+ residual (N, out); residual may be y itself]
  void linear(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int N, int in, int out, cudaStream_t stream,
              const bf16* residual = nullptr);
  // dx (N, in) = dy (N, out) W, or += with accumulate; dx bf16 or (fp32_dx) fp32
  void linear_dinput(void* dx, bool fp32_dx, bool accumulate, const bf16* dy, const bf16* w, int N, int in, int out,
                     cudaStream_t stream);
  // dw (out, in) += dy^T (out, N) x (N, in)      (fp32)
  void linear_dweight(float* dw, const bf16* dy, const bf16* x, int N, int in, int out, cudaStream_t stream);

  // Matmuls that ran on naive_gemm so far (0 on an H100 unless a shape is unusual).
  long long naive_calls() const { return naive_calls_; }
  train::Matmul& matmul() { return matmul_; }

 private:
  train::Matmul matmul_;
  bool naive_only_;
  long long naive_calls_ = 0;
};

}  // namespace gpuaccept::fsdp::gpu
