#include "fsdp-lora/gpu/gemm.h"

#include <cstdint>
#include <stdexcept>

namespace gpuaccept::fsdp::gpu {

namespace {

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

ColumnMajorCall column_major(const RowMajorGemm& g) {
  train::GemmShape s;
  s.transa = g.tb;  // cuBLASLt's A is our B
  s.transb = g.ta;  // cuBLASLt's B is our A
  s.m = g.N, s.n = g.M, s.k = g.K;
  s.lda = g.ldb, s.ldb = g.lda, s.ldd = g.ldd;
  s.batch = g.batch;
  s.stride_a = g.stride_b, s.stride_b = g.stride_a, s.stride_d = g.stride_d;
  s.fp32_out = g.fp32_out;
  s.accumulate = g.accumulate;
  s.epilogue = g.bias ? train::Epilogue::Bias : train::Epilogue::None;
  return {s, g.b, g.a};
}

Gemm::Gemm(bool naive_only, bool autotune) : matmul_(std::size_t{32} << 20, autotune), naive_only_(naive_only) {}

void Gemm::run(const RowMajorGemm& g, cudaStream_t stream) {
  if (g.M == 0 || g.N == 0) return;
  if (g.K == 0) throw std::invalid_argument("Gemm::run: K = 0");
  const ColumnMajorCall call = column_major(g);
  // Matmul promises cuBLASLt 16-byte aligned operands (src/train/matmul.cpp's preference).
  const bool aligned = aligned16(g.a) && aligned16(g.b) && aligned16(g.d) && aligned16(g.c) && aligned16(g.bias);
  if (naive_only_ || !aligned || !matmul_.supports(call.shape)) {
    ++naive_calls_;
    naive_gemm(g, stream);
    return;
  }
  matmul_.run(call.shape, call.a, call.b, g.d, g.bias, stream, g.c);
}

// y (N, out) = x (N, in) W^T: A = x (N, in), B = W stored (out, in) used transposed.
void Gemm::linear(bf16* y, const bf16* x, const bf16* w, const bf16* bias, int N, int in, int out,
                  cudaStream_t stream, const bf16* residual) {
  run({.M = N, .N = out, .K = in,
       .a = x, .lda = in,
       .b = w, .ldb = in, .tb = true,
       .d = y, .ldd = out,
       .accumulate = residual != nullptr, .c = residual == y ? nullptr : residual,
       .bias = bias},
      stream);
}

// dx (N, in) = dy (N, out) W (out, in): both as stored.
void Gemm::linear_dinput(void* dx, bool fp32_dx, bool accumulate, const bf16* dy, const bf16* w, int N, int in,
                         int out, cudaStream_t stream) {
  run({.M = N, .N = in, .K = out,
       .a = dy, .lda = out,
       .b = w, .ldb = in,
       .d = dx, .ldd = in, .fp32_out = fp32_dx,
       .accumulate = accumulate},
      stream);
}

// dw (out, in) += dy^T x: A = dy stored (N, out) used transposed, B = x (N, in) as stored.
void Gemm::linear_dweight(float* dw, const bf16* dy, const bf16* x, int N, int in, int out, cudaStream_t stream) {
  run({.M = out, .N = in, .K = N,
       .a = dy, .lda = out, .ta = true,
       .b = x, .ldb = in,
       .d = dw, .ldd = in, .fp32_out = true,
       .accumulate = true},
      stream);
}

}  // namespace gpuaccept::fsdp::gpu
