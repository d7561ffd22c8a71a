#include "smoke/gemm_verify.h"

#include <cmath>
#include <cstring>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <fmt/format.h>

namespace gpuaccept::smoke {

namespace {
struct TypeRow {
  GemmDtype type;
  const char* name;
  std::size_t in_bytes, out_bytes;
  int min_cc;
  GemmTolerance tol;
};
// out_rel: unit roundoff of the output type, doubled for margin (bf16 2^-8, fp16 2^-11, fp32 2^-24).
// acc_rel: fp32 accumulation is far below 1e-5 of sum|ab| at any k we run; tf32 rounds
// each input to 10 mantissa bits (products off by up to ~2^-10); Hopper's fp8 tensor
// cores accumulate partial sums in reduced precision before promoting to fp32.
const TypeRow kTypes[] = {
    {GemmDtype::bf16, "bf16", 2, 2, 80, {2.0 / 256, 1e-5}},
    {GemmDtype::fp16, "fp16", 2, 2, 53, {2.0 / 2048, 1e-5}},
    {GemmDtype::tf32, "tf32", 4, 4, 80, {2.0 / 16777216, 2.5e-3}},
    {GemmDtype::fp32, "fp32", 4, 4, 0, {2.0 / 16777216, 1e-5}},
    {GemmDtype::fp8_e4m3, "fp8_e4m3", 1, 2, 89, {2.0 / 256, 1e-3}},
};
const TypeRow& row(GemmDtype t) {
  for (const auto& r : kTypes)
    if (r.type == t) return r;
  return kTypes[0];
}

double bf16_bits(std::uint16_t bits) {
  const std::uint32_t f = static_cast<std::uint32_t>(bits) << 16;
  float v;
  std::memcpy(&v, &f, sizeof v);
  return v;
}

template <typename T>
T load(const void* bytes, std::size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(bytes) + i * sizeof(T), sizeof(T));
  return v;
}
}  // namespace

std::string_view to_string(GemmDtype t) { return row(t).name; }

std::optional<GemmDtype> parse_gemm_dtype(std::string_view name) {
  for (const auto& r : kTypes)
    if (name == r.name) return r.type;
  return std::nullopt;
}

std::size_t input_bytes(GemmDtype t) { return row(t).in_bytes; }
std::size_t output_bytes(GemmDtype t) { return row(t).out_bytes; }
int min_compute_capability(GemmDtype t) { return row(t).min_cc; }
GemmTolerance gemm_tolerance(GemmDtype t) { return row(t).tol; }

double allowed_error(GemmDtype t, double ref, double sum_abs) {
  const GemmTolerance tol = gemm_tolerance(t);
  return tol.out_rel * std::fabs(ref) + tol.acc_rel * sum_abs;
}

bool within_tolerance(GemmDtype t, double got, double ref, double sum_abs) {
  return std::isfinite(got) && std::fabs(got - ref) <= allowed_error(t, ref, sum_abs);
}

std::vector<double> decode_inputs(GemmDtype t, const void* bytes, std::size_t count) {
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    switch (t) {
      case GemmDtype::bf16: out[i] = bf16_bits(load<std::uint16_t>(bytes, i)); break;
      case GemmDtype::fp16: out[i] = __half2float(__half(load<__half_raw>(bytes, i))); break;
      case GemmDtype::tf32:
      case GemmDtype::fp32: out[i] = load<float>(bytes, i); break;
      case GemmDtype::fp8_e4m3: {
        __nv_fp8_e4m3 v;
        v.__x = load<__nv_fp8_storage_t>(bytes, i);
        out[i] = static_cast<float>(v);
        break;
      }
    }
  }
  return out;
}

std::vector<double> decode_outputs(GemmDtype t, const void* bytes, std::size_t count) {
  // fp8 GEMMs write bf16; every other type writes its own type.
  return decode_inputs(t == GemmDtype::fp8_e4m3 ? GemmDtype::bf16 : t, bytes, count);
}

GemmCheck check_gemm_samples(GemmDtype t, const std::vector<int>& rows, const std::vector<std::vector<double>>& a_rows,
                             const std::vector<int>& cols, const std::vector<std::vector<double>>& b_cols,
                             const std::vector<double>& got) {
  GemmCheck c;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t q = 0; q < cols.size(); ++q) {
      const auto& a = a_rows[r];
      const auto& b = b_cols[q];
      double ref = 0, sum_abs = 0;
      for (std::size_t p = 0; p < a.size() && p < b.size(); ++p) {
        ref += a[p] * b[p];
        sum_abs += std::fabs(a[p] * b[p]);
      }
      const double g = got[r * cols.size() + q];
      ++c.checked;
      if (std::isnan(g)) {
        if (c.unwritten++ == 0 && c.first_problem.empty())
          c.first_problem = fmt::format("D[{},{}] was never written (still the NaN poison)", rows[r], cols[q]);
        continue;
      }
      const double allowed = allowed_error(t, ref, sum_abs);
      const double ratio = allowed > 0 ? std::fabs(g - ref) / allowed : (g == ref ? 0.0 : INFINITY);
      c.worst_ratio = std::max(c.worst_ratio, std::isfinite(g) ? ratio : INFINITY);
      if (!within_tolerance(t, g, ref, sum_abs) && c.bad++ == 0 && c.first_problem.empty())
        c.first_problem = fmt::format("D[{},{}] = {:.6g}, reference {:.6g}, allowed error {:.3g}", rows[r], cols[q], g,
                                      ref, allowed);
    }
  }
  return c;
}

}  // namespace gpuaccept::smoke
