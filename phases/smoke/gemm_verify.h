// GEMM data types and result verification, pure so the tolerance math is
// unit-tested: the host recomputes sampled entries D[i,j] = sum_p A[p,i] * B[p,j]
// in double from copies of the GPU's own inputs, and an entry passes when
//   |got - ref| <= out_rel * |ref| + acc_rel * sum_p |A[p,i] * B[p,j]|
// out_rel covers rounding the result to the output type, acc_rel the accumulation
// order and (tf32, fp8) reduced-precision products. A NaN is an entry the GEMM never
// wrote: outputs are poisoned with NaN before the checked run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuaccept::smoke {

enum class GemmDtype { bf16, fp16, tf32, fp32, fp8_e4m3 };

std::string_view to_string(GemmDtype t);
std::optional<GemmDtype> parse_gemm_dtype(std::string_view name);

std::size_t input_bytes(GemmDtype t);   // one element of A or B
std::size_t output_bytes(GemmDtype t);  // one element of D (fp8 writes bf16)
// Lowest compute capability (major*10+minor) cuBLASLt runs this type on.
int min_compute_capability(GemmDtype t);

struct GemmTolerance {
  double out_rel;  // times |ref|
  double acc_rel;  // times sum |a*b|
};
GemmTolerance gemm_tolerance(GemmDtype t);
double allowed_error(GemmDtype t, double ref, double sum_abs);
bool within_tolerance(GemmDtype t, double got, double ref, double sum_abs);  // false for NaN/Inf

// Raw device bytes of `count` elements -> values (host conversions from cuda_fp16/bf16/fp8.h).
std::vector<double> decode_inputs(GemmDtype t, const void* bytes, std::size_t count);
std::vector<double> decode_outputs(GemmDtype t, const void* bytes, std::size_t count);

struct GemmCheck {
  int checked = 0, bad = 0, unwritten = 0;
  double worst_ratio = 0;  // max |got-ref| / allowed
  std::string first_problem;
  bool ok() const { return bad == 0 && unwritten == 0 && checked > 0; }
};
// a_rows[r]: the k values of op(A)'s row rows[r]; b_cols[c]: B's column cols[c];
// got[r * cols.size() + c]: the GPU's D[rows[r], cols[c]].
GemmCheck check_gemm_samples(GemmDtype t, const std::vector<int>& rows, const std::vector<std::vector<double>>& a_rows,
                             const std::vector<int>& cols, const std::vector<std::vector<double>>& b_cols,
                             const std::vector<double>& got);

}  // namespace gpuaccept::smoke
