// Rotary position embedding in place (kernels.h gives the math and the angle precision).
// One thread takes W consecutive pairs (i0 .. i0+W-1) of up to kHeadsPerThread heads of one
// row: it computes the W cos/sin once and rotates the same pairs of each head, reading
// x[i0 ..] and x[i0+HD/2 ..] with 16-byte accesses when W = 8 (HD % 16 == 0, row_stride % 8
// == 0, x aligned), one value otherwise. Adjacent threads take adjacent groups of one head,
// so a warp's accesses are whole 128-byte lines. The grid-stride loop runs over
// rows x head blocks x groups.
#include <stdexcept>
#include <string>

#include "fsdp-lora/gpu/kernels/common.cuh"

namespace gpuaccept::fsdp::gpu {

namespace {

namespace td = detail::td;

constexpr int kBlock = 256;
constexpr int kHeadsPerThread = 4;  // one set of cos/sin serves 4 heads (28 query heads: 7 blocks)
constexpr double kInvTwoPi = 0.159154943091895335768883763372514362;  // 1 / (2 pi)

using detail::check_launch;
using detail::require;

// cos and sin of t * inv_freq_i, inv_freq_i = theta^(-2i/HD) = 2^(i * log2_step) with
// log2_step = -2 log2(theta) / HD (from the host, in double). The angle in turns,
// t * inv_freq_i / (2 pi), is formed in double (relative error ~1e-16: 5e-13 turns at
// t = 32767), its whole turns dropped exactly (r - rint(r) is exact in double), and the
// fraction f in [-1/2, 1/2] goes to fp32 (error <= 2^-26 turns) for sincospif(2f), which
// --use_fast_math leaves accurate (1 ulp): about 2e-7 absolute in all.
__device__ inline void rope_cos_sin(int t, int i, double log2_step, float& c, float& s) {
  double turns = static_cast<double>(t) * (exp2(static_cast<double>(i) * log2_step) * kInvTwoPi);
  turns -= rint(turns);
  sincospif(static_cast<float>(2.0 * turns), &s, &c);
}

// Forward (sign = +1) or the inverse rotation (sign = -1: sin -> -sin), in place.
template <int W>
__global__ void rope_kernel(bf16* x, int rows, int T, int heads, int HD, int row_stride, double log2_step,
                            float sign) {
  const int half = HD / 2, groups = half / W;
  const int head_blocks = (heads + kHeadsPerThread - 1) / kHeadsPerThread;
  const std::size_t items = static_cast<std::size_t>(rows) * head_blocks * groups;
  for (std::size_t item = td::global_thread(); item < items; item += td::global_threads()) {
    const int i0 = static_cast<int>(item % groups) * W;
    const std::size_t rest = item / groups;
    const int head0 = static_cast<int>(rest % head_blocks) * kHeadsPerThread;
    const int row = static_cast<int>(rest / head_blocks);
    const int t = row % T;

    float c[W], s[W];
#pragma unroll
    for (int k = 0; k < W; ++k) {
      rope_cos_sin(t, i0 + k, log2_step, c[k], s[k]);
      s[k] *= sign;
    }
    bf16* p = x + static_cast<std::size_t>(row) * row_stride + static_cast<std::size_t>(head0) * HD + i0;
    const int count = min(kHeadsPerThread, heads - head0);
    for (int h = 0; h < count; ++h, p += HD) {
      float a[W], b[W];
      td::load_bf16<W>(a, p);
      td::load_bf16<W>(b, p + half);
#pragma unroll
      for (int k = 0; k < W; ++k) {
        const float ra = a[k] * c[k] - b[k] * s[k];
        const float rb = b[k] * c[k] + a[k] * s[k];
        a[k] = ra;
        b[k] = rb;
      }
      td::store_bf16<W>(p, a);
      td::store_bf16<W>(p + half, b);
    }
  }
}

__global__ void rope_table_kernel(float* __restrict__ cos_out, float* __restrict__ sin_out, int T, int half,
                                  double log2_step) {
  const std::size_t items = static_cast<std::size_t>(T) * half;
  for (std::size_t item = td::global_thread(); item < items; item += td::global_threads()) {
    float c, s;
    rope_cos_sin(static_cast<int>(item / half), static_cast<int>(item % half), log2_step, c, s);
    cos_out[item] = c;
    sin_out[item] = s;
  }
}

double log2_step_of(double theta, int HD) { return -2.0 * std::log2(theta) / HD; }

void launch_rope(const char* name, bf16* x, int rows, int T, int heads, int HD, int row_stride, double theta,
                 float sign, cudaStream_t stream) {
  require(rows >= 0 && T > 0, "rope: rows must be >= 0 and T > 0");
  require(heads > 0 && HD > 0 && HD % 2 == 0, "rope: heads must be > 0 and HD even and > 0");
  require(static_cast<long long>(row_stride) >= static_cast<long long>(heads) * HD,
          "rope: row_stride must be >= heads * HD");
  require(std::isfinite(theta) && theta > 0, "rope: theta must be finite and > 0");
  if (rows == 0) return;
  const int half = HD / 2, head_blocks = td::ceil_div(heads, kHeadsPerThread);
  const double step = log2_step_of(theta, HD);
  if (half % 8 == 0 && row_stride % 8 == 0 && td::aligned16(x)) {
    const std::size_t items = static_cast<std::size_t>(rows) * head_blocks * (half / 8);
    rope_kernel<8><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(x, rows, T, heads, HD, row_stride, step, sign);
  } else {
    const std::size_t items = static_cast<std::size_t>(rows) * head_blocks * half;
    rope_kernel<1><<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(x, rows, T, heads, HD, row_stride, step, sign);
  }
  check_launch(name);
}

}  // namespace

void rope_forward(bf16* x, int rows, int T, int heads, int HD, int row_stride, double theta, cudaStream_t stream) {
  launch_rope("rope_forward", x, rows, T, heads, HD, row_stride, theta, 1.f, stream);
}

void rope_backward(bf16* dx, int rows, int T, int heads, int HD, int row_stride, double theta, cudaStream_t stream) {
  launch_rope("rope_backward", dx, rows, T, heads, HD, row_stride, theta, -1.f, stream);
}

void rope_table(float* cos_out, float* sin_out, int T, int HD, double theta, cudaStream_t stream) {
  require(T >= 0 && HD > 0 && HD % 2 == 0, "rope_table: T must be >= 0 and HD even and > 0");
  require(std::isfinite(theta) && theta > 0, "rope_table: theta must be finite and > 0");
  if (T == 0) return;
  const std::size_t items = static_cast<std::size_t>(T) * (HD / 2);
  rope_table_kernel<<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(cos_out, sin_out, T, HD / 2,
                                                                        log2_step_of(theta, HD));
  check_launch("rope_table");
}

}  // namespace gpuaccept::fsdp::gpu
