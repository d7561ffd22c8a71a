#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "smoke/gemm_verify.h"

using namespace gpuaccept::smoke;

TEST_CASE("gemm dtype names round-trip", "[smoke][gemm]") {
  for (auto t : {GemmDtype::bf16, GemmDtype::fp16, GemmDtype::tf32, GemmDtype::fp32, GemmDtype::fp8_e4m3})
    CHECK(parse_gemm_dtype(to_string(t)) == t);
  CHECK_FALSE(parse_gemm_dtype("int8"));
  CHECK(output_bytes(GemmDtype::fp8_e4m3) == 2);  // fp8 writes bf16
  CHECK(min_compute_capability(GemmDtype::fp8_e4m3) == 89);
}

TEST_CASE("tolerance scales with the output and with sum |a*b|", "[smoke][gemm]") {
  // bf16: one output rounding (2^-8 relative) is allowed...
  CHECK(within_tolerance(GemmDtype::bf16, 100.0 * (1 + 1.0 / 256), 100.0, 1000.0));
  // ...a wrong value is not, even with a large sum |a*b|.
  CHECK_FALSE(within_tolerance(GemmDtype::bf16, 110.0, 100.0, 4096.0));
  // tf32: inputs rounded to 10 mantissa bits, error up to ~2^-10 of sum |a*b|.
  CHECK(within_tolerance(GemmDtype::tf32, 10.0 + 2.0, 10.0, 4096.0));
  CHECK_FALSE(within_tolerance(GemmDtype::tf32, 10.0 + 20.0, 10.0, 4096.0));
  // fp32 is strict.
  CHECK(within_tolerance(GemmDtype::fp32, 43.0 + 1e-3, 43.0, 4096.0));
  CHECK_FALSE(within_tolerance(GemmDtype::fp32, 43.1, 43.0, 4096.0));
  // Unwritten (NaN) or infinite entries never pass.
  CHECK_FALSE(within_tolerance(GemmDtype::bf16, std::numeric_limits<double>::quiet_NaN(), 0.0, 1.0));
  CHECK_FALSE(within_tolerance(GemmDtype::fp16, INFINITY, 0.0, 1.0));
  CHECK(allowed_error(GemmDtype::fp16, -8.0, 0.0) == Approx(8.0 * 2.0 / 2048));
}

TEST_CASE("device bytes decode to values", "[smoke][gemm]") {
  const std::uint16_t bf16[] = {0x3F80, 0xBF00, 0xFFFF};  // 1, -0.5, NaN
  const auto b = decode_inputs(GemmDtype::bf16, bf16, 3);
  CHECK(b[0] == 1.0);
  CHECK(b[1] == -0.5);
  CHECK(std::isnan(b[2]));  // the 0xFF poison reads as NaN
  const std::uint16_t fp16[] = {0x3C00, 0xC000};  // 1, -2
  CHECK(decode_inputs(GemmDtype::fp16, fp16, 2) == std::vector<double>{1.0, -2.0});
  const std::uint8_t fp8[] = {0x38, 0xB0};  // e4m3: 1.0, -0.5
  CHECK(decode_inputs(GemmDtype::fp8_e4m3, fp8, 2) == std::vector<double>{1.0, -0.5});
  const std::uint16_t out[] = {0x4000};  // fp8 GEMMs write bf16: 2.0
  CHECK(decode_outputs(GemmDtype::fp8_e4m3, out, 1) == std::vector<double>{2.0});
}

TEST_CASE("sampled entries are checked against a double reference", "[smoke][gemm]") {
  const std::vector<int> rows{0, 5}, cols{1};
  const std::vector<std::vector<double>> a{{1, 2, 3}, {-1, 0.5, 0}}, b{{1, 1, 1}};
  // References: 6 and -0.5.
  GemmCheck c = check_gemm_samples(GemmDtype::fp32, rows, a, cols, b, {6.0, -0.5});
  CHECK(c.ok());
  CHECK(c.checked == 2);

  c = check_gemm_samples(GemmDtype::fp32, rows, a, cols, b, {6.0, 0.5});
  CHECK_FALSE(c.ok());
  CHECK(c.bad == 1);
  CHECK_THAT(c.first_problem, Catch::Contains("D[5,1]"));

  c = check_gemm_samples(GemmDtype::fp32, rows, a, cols, b, {std::numeric_limits<double>::quiet_NaN(), -0.5});
  CHECK_FALSE(c.ok());
  CHECK(c.unwritten == 1);
  CHECK_THAT(c.first_problem, Catch::Contains("never written"));
}
