// GPU check of phases/fsdp-lora/gpu/kernels.h: RMSNorm, RoPE, SwiGLU and LoRA dropout,
// forward and backward, on random inputs (fixed seed), at odd sizes and at Qwen2-7B's sizes
// (C = 3584, I = 18944, NH = 28, NKV = 4, HD = 128, T = 4096; RoPE also at position 32767),
// against plain double-precision loops on the CPU. The CPU's analytic backward formulas are
// themselves checked once against central finite differences of the CPU forward (tiny sizes).
// One line per check:
//   kernel <name> <shape> max_abs_err=... max_rel_err=... tol=... PASS|FAIL
// and exit status 1 if any check fails. Needs a GPU, so it is not a ctest test.
//   build/bin/fsdp-kernel-tests [--small]   (--small: odd sizes only, e.g. under compute-sanitizer)
//
// Errors: max_rel_err is |gpu - ref| / max(|ref|, kFloor * max|ref|) over the tensor (the
// floor keeps references near 0, where bf16 rounding is relatively large, from dominating);
// a check passes when it is <= tol and every value is finite. Bitwise checks print 0 or nan.
// The dropout rate checks print |rate - p| as max_abs_err and the same in standard deviations
// of the binomial as max_rel_err, against tol = 4 (sigmas).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "fsdp-lora/gpu/kernels.h"
#include "train/checksum_kernels.h"

namespace {

namespace kn = gpuaccept::fsdp::gpu;
using bf16 = __nv_bfloat16;

// bf16 outputs: each is an fp32 result (error ~1e-6 relative to the row's scale) rounded
// once to bf16, which is up to 2^-8 = 3.9e-3 relative; 5e-3 leaves room for the fp32 part.
constexpr double kTolBf16 = 5e-3;
// fp32 outputs summed in fp32 (up to 8192 terms per lane sum, atomics in any order).
constexpr double kTolFp32 = 1e-4;
// RoPE's fp32 cos/sin: about 2e-7 absolute by design (kernels.h); with the floor of 0.1 this
// bounds the absolute error by 5e-7 near 0 and 5e-6 elsewhere. An fp32 angle t * inv_freq
// is off by ~1e-4 rad at t = 4095 and ~1e-3 at t = 32767, so this fails it.
constexpr double kTolRopeTable = 5e-6;
// The CPU's analytic gradients against central differences (h = 1e-5, double): ~1e-10.
constexpr double kTolFiniteDiff = 1e-6;
// Copies and values that must be replayed bit for bit.
constexpr double kExact = 0.0;
constexpr double kFloor = 0.1;
constexpr double kSigmas = 4.0;

#define CUDA_CHECK(call)                                                                                   \
  do {                                                                                                     \
    const cudaError_t rc_ = (call);                                                                        \
    if (rc_ != cudaSuccess) throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(rc_)); \
  } while (0)

int g_failures = 0;

// ---- host data -------------------------------------------------------------------------

std::uint64_t splitmix64(std::uint64_t x) {  // written out again here: the test's own copy
  std::uint64_t z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Rng {  // splitmix64 as a generator: the same numbers on every machine
  std::uint64_t state;
  std::uint64_t next() {
    const std::uint64_t out = splitmix64(state);
    state += 0x9e3779b97f4a7c15ull;
    return out;
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1p-53; }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
};

float round_bf16(float x) { return __bfloat162float(__float2bfloat16(x)); }

// Values exactly representable in bf16, so CPU and GPU see the same inputs.
std::vector<float> random_bf16(Rng& rng, std::size_t n, double lo, double hi) {
  std::vector<float> v(n);
  for (auto& x : v) x = round_bf16(static_cast<float>(rng.uniform(lo, hi)));
  return v;
}
std::vector<float> random_f32(Rng& rng, std::size_t n, double lo, double hi) {
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}
std::vector<double> random_f64(Rng& rng, std::size_t n, double lo, double hi) {
  std::vector<double> v(n);
  for (auto& x : v) x = rng.uniform(lo, hi);
  return v;
}
std::vector<bf16> to_bf16(const std::vector<float>& v) {
  std::vector<bf16> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = __float2bfloat16(v[i]);
  return out;
}
std::vector<float> from_bf16(const std::vector<bf16>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = __bfloat162float(v[i]);
  return out;
}
std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// ---- device buffers ----------------------------------------------------------------------

template <typename T>
class Buffer {
 public:
  explicit Buffer(std::size_t n) : n_(n) { CUDA_CHECK(cudaMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(T))); }
  explicit Buffer(const std::vector<T>& host) : Buffer(host.size()) { upload(host); }
  ~Buffer() { cudaFree(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  T* get() const { return p_; }
  void upload(const std::vector<T>& host) {
    if (host.size() != n_) throw std::logic_error("upload: size mismatch in the test");
    CUDA_CHECK(cudaMemcpy(p_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    CUDA_CHECK(cudaMemcpy(host.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* p_ = nullptr;
  std::size_t n_;
};

// A bf16 tensor `offset` elements into its allocation (offset 1: misaligned, so the kernels
// take their one-value paths). Held on the host as floats holding bf16 values.
class Tensor {
 public:
  explicit Tensor(const std::vector<float>& v, int offset = 0) : buf_(padded(v, offset)), offset_(offset) {}
  bf16* get() const { return buf_.get() + offset_; }
  void upload(const std::vector<float>& v) { buf_.upload(padded(v, offset_)); }
  std::vector<float> download() const {
    const auto all = from_bf16(buf_.download());
    return {all.begin() + offset_, all.end()};
  }
  std::vector<bf16> bits() const {
    const auto all = buf_.download();
    return {all.begin() + offset_, all.end()};
  }

 private:
  static std::vector<bf16> padded(const std::vector<float>& v, int offset) {
    std::vector<float> p(static_cast<std::size_t>(offset), 0.f);
    p.insert(p.end(), v.begin(), v.end());
    return to_bf16(p);
  }
  Buffer<bf16> buf_;
  int offset_;
};

void sync() { CUDA_CHECK(cudaDeviceSynchronize()); }

// ---- comparison --------------------------------------------------------------------------

void report(const std::string& name, const std::string& shape, double max_abs, double max_rel, double tol, bool pass) {
  std::printf("kernel %-34s %-44s max_abs_err=%.3e max_rel_err=%.3e tol=%.0e %s\n", name.c_str(), shape.c_str(),
              max_abs, max_rel, tol, pass ? "PASS" : "FAIL");
  if (!pass) ++g_failures;
}

// Compares got[i] with ref[i] for the i where `use(i)` (all by default).
template <typename G>
void compare(const std::string& name, const std::string& shape, const std::vector<G>& got,
             const std::vector<double>& ref, double tol, const std::function<bool(std::size_t)>& use = {}) {
  if (got.size() != ref.size()) throw std::logic_error(name + ": size mismatch in the test");
  double max_ref = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (!use || use(i)) max_ref = std::max(max_ref, std::abs(ref[i]));
  const double floor = std::max(kFloor * max_ref, 1e-30);
  double max_abs = 0.0, max_rel = 0.0;
  bool finite = true;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (use && !use(i)) continue;
    const double g = static_cast<double>(got[i]);
    if (!std::isfinite(g)) {
      finite = false;
      continue;
    }
    const double err = std::abs(g - ref[i]);
    max_abs = std::max(max_abs, err);
    max_rel = std::max(max_rel, err / std::max(std::abs(ref[i]), floor));
  }
  if (!finite) max_abs = max_rel = INFINITY;
  report(name, shape, max_abs, max_rel, tol, finite && max_rel <= tol);
}

// Bitwise equality of two host arrays (replays, determinism, untouched buffers).
template <typename T>
void compare_bits(const std::string& name, const std::string& shape, const std::vector<T>& a, const std::vector<T>& b) {
  const bool same = a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
  report(name, shape, same ? 0.0 : NAN, same ? 0.0 : NAN, kExact, same);
}

// A count of `hits` out of n Bernoulli(q) trials: within kSigmas standard deviations of q
// (exactly q when q is 0 or 1).
void check_rate(const std::string& name, const std::string& shape, std::size_t hits, std::size_t n, double q) {
  const double rate = static_cast<double>(hits) / static_cast<double>(n);
  const double sigma = std::sqrt(q * (1 - q) / static_cast<double>(n));
  const double dev = std::abs(rate - q);
  const double in_sigmas = sigma > 0 ? dev / sigma : (dev == 0 ? 0.0 : INFINITY);
  report(name, shape, dev, in_sigmas, kSigmas, in_sigmas <= kSigmas);
}

std::string shape_of(std::initializer_list<std::pair<const char*, long long>> dims) {
  std::string s;
  for (const auto& [key, value] : dims) s += (s.empty() ? "" : " ") + std::string(key) + "=" + std::to_string(value);
  return s;
}

// ---- CPU references (double) -----------------------------------------------------------

// One row of RMSNorm: out = x * rstd * w, returns rstd.
template <typename T>
double rmsnorm_row(const T* x, const T* w, int C, double eps, double* out) {
  double sq = 0;
  for (int c = 0; c < C; ++c) sq += static_cast<double>(x[c]) * x[c];
  const double rstd = 1.0 / std::sqrt(sq / C + eps);
  for (int c = 0; c < C; ++c) out[c] = x[c] * rstd * w[c];
  return rstd;
}
// Its backward given rstd: dx[c] = rstd (g - xhat mean(g xhat)), dw[c] += dout xhat.
template <typename T>
void rmsnorm_row_backward(const T* dout, const T* x, const T* w, double rstd, int C, double* dx, double* dw) {
  double mean_gx = 0;
  for (int c = 0; c < C; ++c) mean_gx += static_cast<double>(dout[c]) * w[c] * (x[c] * rstd);
  mean_gx /= C;
  for (int c = 0; c < C; ++c) {
    const double xhat = x[c] * rstd;
    dx[c] = rstd * (static_cast<double>(dout[c]) * w[c] - xhat * mean_gx);
    if (dw != nullptr) dw[c] += dout[c] * xhat;
  }
}

// cos/sin of t * theta^(-2i/HD) for t < T, i < HD/2: (T, HD/2) each.
struct RopeTable {
  int half;
  std::vector<double> cos, sin;
  RopeTable(int T, int HD, double theta) : half(HD / 2), cos(static_cast<std::size_t>(T) * half), sin(cos.size()) {
    for (int i = 0; i < half; ++i) {
      const double inv_freq = std::pow(theta, -2.0 * i / HD);
      for (int t = 0; t < T; ++t) {
        const double angle = t * inv_freq;
        cos[static_cast<std::size_t>(t) * half + i] = std::cos(angle);
        sin[static_cast<std::size_t>(t) * half + i] = std::sin(angle);
      }
    }
  }
};
// One head in place: forward (sign +1) or inverse (sign -1) rotation at position t.
template <typename T>
void rope_head(T* x, const RopeTable& table, int t, double sign) {
  const int half = table.half;
  for (int i = 0; i < half; ++i) {
    const double c = table.cos[static_cast<std::size_t>(t) * half + i];
    const double s = sign * table.sin[static_cast<std::size_t>(t) * half + i];
    const double a = x[i], b = x[i + half];
    x[i] = static_cast<T>(a * c - b * s);
    x[i + half] = static_cast<T>(b * c + a * s);
  }
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double silu(double x) { return x * sigmoid(x); }
double silu_grad(double x) {
  const double s = sigmoid(x);
  return s * (1 + x * (1 - s));
}

// ---- the CPU's analytic backward against finite differences ----------------------------

// Central differences of L(v) = sum(dout * f(v)) with respect to every element of v.
std::vector<double> numeric_gradient(std::vector<double> v, const std::function<double(const std::vector<double>&)>& L) {
  const double h = 1e-5;
  std::vector<double> g(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + h;
    const double up = L(v);
    v[i] = keep - h;
    const double down = L(v);
    v[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

void test_cpu_gradients(Rng& rng) {
  // RMSNorm, 3 rows of 7: dx and dw.
  {
    const int N = 3, C = 7;
    const double eps = 1e-6;
    const std::string shape = shape_of({{"N", N}, {"C", C}});
    const auto x = random_f64(rng, N * C, -2, 2), w = random_f64(rng, C, 0.5, 1.5);
    const auto dout = random_f64(rng, N * C, -1, 1);
    auto loss = [&](const std::vector<double>& xv, const std::vector<double>& wv) {
      std::vector<double> out(C);
      double L = 0;
      for (int n = 0; n < N; ++n) {
        rmsnorm_row(&xv[n * C], wv.data(), C, eps, out.data());
        for (int c = 0; c < C; ++c) L += dout[n * C + c] * out[c];
      }
      return L;
    };
    std::vector<double> dx(N * C), dw(C, 0.0), out(C);
    for (int n = 0; n < N; ++n) {
      const double rstd = rmsnorm_row(&x[n * C], w.data(), C, eps, out.data());
      rmsnorm_row_backward(&dout[n * C], &x[n * C], w.data(), rstd, C, &dx[n * C], dw.data());
    }
    compare("cpu_fd(rmsnorm dx)", shape, dx,
            numeric_gradient(x, [&](const std::vector<double>& v) { return loss(v, w); }), kTolFiniteDiff);
    compare("cpu_fd(rmsnorm dw)", shape, dw,
            numeric_gradient(w, [&](const std::vector<double>& v) { return loss(x, v); }), kTolFiniteDiff);
  }
  // RoPE, 4 positions x 2 heads of 6, theta 10 (large angles).
  {
    const int T = 4, heads = 2, HD = 6;
    const std::string shape = shape_of({{"T", T}, {"heads", heads}, {"HD", HD}});
    const RopeTable table(T, HD, 10.0);
    const auto x = random_f64(rng, T * heads * HD, -1, 1), dout = random_f64(rng, x.size(), -1, 1);
    auto loss = [&](const std::vector<double>& v) {
      std::vector<double> y = v;
      double L = 0;
      for (int t = 0; t < T; ++t)
        for (int h = 0; h < heads; ++h) rope_head(&y[(t * heads + h) * HD], table, t, 1.0);
      for (std::size_t i = 0; i < y.size(); ++i) L += dout[i] * y[i];
      return L;
    };
    std::vector<double> dx = dout;
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < heads; ++h) rope_head(&dx[(t * heads + h) * HD], table, t, -1.0);
    compare("cpu_fd(rope dx)", shape, dx, numeric_gradient(x, loss), kTolFiniteDiff);
  }
  // SwiGLU, 2 rows of 5.
  {
    const int n = 10;
    const std::string shape = shape_of({{"N", 2}, {"I", 5}});
    const auto gate = random_f64(rng, n, -5, 5), up = random_f64(rng, n, -2, 2), dh = random_f64(rng, n, -1, 1);
    auto loss = [&](const std::vector<double>& g, const std::vector<double>& u) {
      double L = 0;
      for (int i = 0; i < n; ++i) L += dh[i] * silu(g[i]) * u[i];
      return L;
    };
    std::vector<double> dgate(n), dup(n);
    for (int i = 0; i < n; ++i) {
      dgate[i] = dh[i] * up[i] * silu_grad(gate[i]);
      dup[i] = dh[i] * silu(gate[i]);
    }
    compare("cpu_fd(swiglu dgate)", shape, dgate,
            numeric_gradient(gate, [&](const std::vector<double>& v) { return loss(v, up); }), kTolFiniteDiff);
    compare("cpu_fd(swiglu dup)", shape, dup,
            numeric_gradient(up, [&](const std::vector<double>& v) { return loss(gate, v); }), kTolFiniteDiff);
  }
}

// ---- RMSNorm -----------------------------------------------------------------------------

void test_rmsnorm(Rng& rng, int N, int C, int offset) {
  const std::string shape = shape_of({{"N", N}, {"C", C}, {"offset", offset}});
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  const float eps = 1e-6f;
  const auto x = random_bf16(rng, NC, -2, 2.6);
  const auto w = random_bf16(rng, C, 0.5, 1.5);
  Tensor d_x(x, offset), d_w(w);

  std::vector<double> ref_out(NC), ref_rstd(N);
  for (int n = 0; n < N; ++n)
    ref_rstd[n] = rmsnorm_row(&x[static_cast<std::size_t>(n) * C], w.data(), C, eps, &ref_out[static_cast<std::size_t>(n) * C]);
  Tensor d_out(std::vector<float>(NC, 7.f), offset);
  Buffer<float> d_rstd(N);
  kn::rmsnorm_forward(d_out.get(), d_rstd.get(), d_x.get(), d_w.get(), N, C, eps, nullptr);
  sync();
  compare("rmsnorm_forward(out)", shape, d_out.download(), ref_out, kTolBf16);
  compare("rmsnorm_forward(rstd)", shape, d_rstd.download(), ref_rstd, kTolFp32);
  // Without rstd: the same out.
  Tensor d_out2(std::vector<float>(NC, 7.f), offset);
  kn::rmsnorm_forward(d_out2.get(), nullptr, d_x.get(), d_w.get(), N, C, eps, nullptr);
  sync();
  compare_bits("rmsnorm_forward(rstd=nullptr)", shape, d_out.bits(), d_out2.bits());

  // Backward from the CPU's rstd as fp32 (what the GPU stores).
  std::vector<float> rstd(N);
  for (int n = 0; n < N; ++n) rstd[n] = static_cast<float>(ref_rstd[n]);
  Buffer<float> d_rstd_in(rstd);
  const auto dout = random_bf16(rng, NC, -1, 1), dx0 = random_bf16(rng, NC, -1, 1);
  const auto dw0 = random_f32(rng, C, -1, 1);
  std::vector<double> ref_d(NC), ref_dw = to_double(dw0);
  for (int n = 0; n < N; ++n) {
    const std::size_t row = static_cast<std::size_t>(n) * C;
    rmsnorm_row_backward(&dout[row], &x[row], w.data(), static_cast<double>(rstd[n]), C, &ref_d[row], ref_dw.data());
  }
  std::vector<double> ref_acc(NC), ref_dw_zero(C);
  for (std::size_t i = 0; i < NC; ++i) ref_acc[i] = dx0[i] + ref_d[i];
  for (int c = 0; c < C; ++c) ref_dw_zero[c] = ref_dw[c] - dw0[c];
  Tensor d_dout(dout, offset);

  // (1) accumulate into dx, with dw (accumulated onto dw0).
  Tensor d_dx(dx0, offset);
  Buffer<float> d_dw(dw0);
  kn::rmsnorm_backward(d_dx.get(), d_dw.get(), d_dout.get(), d_x.get(), d_w.get(), d_rstd_in.get(), N, C, true, nullptr);
  sync();
  compare("rmsnorm_backward(dx+=,dw)", shape, d_dx.download(), ref_acc, kTolBf16);
  compare("rmsnorm_backward(dw)", shape, d_dw.download(), ref_dw, kTolFp32);
  // (2) accumulate, no dw.
  d_dx.upload(dx0);
  kn::rmsnorm_backward(d_dx.get(), nullptr, d_dout.get(), d_x.get(), d_w.get(), d_rstd_in.get(), N, C, true, nullptr);
  sync();
  compare("rmsnorm_backward(dx+=)", shape, d_dx.download(), ref_acc, kTolBf16);
  // (3) overwrite: dx starts as NaN, which must never be read.
  Tensor d_dx_nan(std::vector<float>(NC, NAN), offset);
  kn::rmsnorm_backward(d_dx_nan.get(), nullptr, d_dout.get(), d_x.get(), d_w.get(), d_rstd_in.get(), N, C, false,
                       nullptr);
  sync();
  compare("rmsnorm_backward(dx=)", shape, d_dx_nan.download(), ref_d, kTolBf16);
  // (4) overwrite in place (dx = dout), with dw from zero.
  Tensor d_inplace(dout, offset);
  Buffer<float> d_dw_zero(std::vector<float>(C, 0.f));
  kn::rmsnorm_backward(d_inplace.get(), d_dw_zero.get(), d_inplace.get(), d_x.get(), d_w.get(), d_rstd_in.get(), N, C,
                       false, nullptr);
  sync();
  compare("rmsnorm_backward(dx=dout,inplace)", shape, d_inplace.download(), ref_d, kTolBf16);
  compare("rmsnorm_backward(dw from 0)", shape, d_dw_zero.download(), ref_dw_zero, kTolFp32);

  // The fp32 gradient (the model's residual stream): dout and dx fp32 `offset` floats into
  // their allocations (offset 1: the one-value path), accumulated or overwritten, with the
  // bf16 copy of the result from the same pass.
  auto padded_f32 = [&](const std::vector<float>& v) {
    std::vector<float> p(static_cast<std::size_t>(offset), 0.f);
    p.insert(p.end(), v.begin(), v.end());
    return p;
  };
  auto unpadded = [&](const std::vector<float>& v) { return std::vector<float>(v.begin() + offset, v.end()); };
  Buffer<float> d_dout32(padded_f32(dout)), d_dx32(padded_f32(dx0));
  Tensor d_copy(std::vector<float>(NC, 7.f), offset);
  kn::rmsnorm_backward_fp32(d_dx32.get() + offset, d_dout32.get() + offset, d_x.get(), d_w.get(), d_rstd_in.get(), N, C,
                            true, nullptr, d_copy.get());
  sync();
  const auto dx32 = unpadded(d_dx32.download());
  compare("rmsnorm_backward_fp32(dx+=)", shape, dx32, ref_acc, kTolFp32);
  compare_bits("rmsnorm_backward_fp32(bf16 copy=bf16(dx))", shape, d_copy.bits(), to_bf16(dx32));
  d_dx32.upload(padded_f32(std::vector<float>(NC, NAN)));
  kn::rmsnorm_backward_fp32(d_dx32.get() + offset, d_dout32.get() + offset, d_x.get(), d_w.get(), d_rstd_in.get(), N, C,
                            false, nullptr);
  sync();
  compare("rmsnorm_backward_fp32(dx=)", shape, unpadded(d_dx32.download()), ref_d, kTolFp32);
}

// ---- RoPE --------------------------------------------------------------------------------

void test_rope_table(int T, int HD, double theta) {
  const std::string shape = shape_of({{"T", T}, {"HD", HD}, {"theta", static_cast<long long>(theta)}});
  const RopeTable ref(T, HD, theta);
  const std::size_t n = ref.cos.size();
  Buffer<float> d_cos(n), d_sin(n);
  kn::rope_table(d_cos.get(), d_sin.get(), T, HD, theta, nullptr);
  sync();
  const auto cos_gpu = d_cos.download(), sin_gpu = d_sin.download();
  compare("rope_table(cos)", shape, cos_gpu, ref.cos, kTolRopeTable);
  compare("rope_table(sin)", shape, sin_gpu, ref.sin, kTolRopeTable);
  // The long positions on their own lines.
  for (const int t : {4095, 32767}) {
    if (t >= T) continue;
    const auto at_t = [&](std::size_t i) { return static_cast<int>(i / ref.half) == t; };
    compare("rope_table(cos,t=" + std::to_string(t) + ")", shape, cos_gpu, ref.cos, kTolRopeTable, at_t);
    compare("rope_table(sin,t=" + std::to_string(t) + ")", shape, sin_gpu, ref.sin, kTolRopeTable, at_t);
  }
}

// q, k and v side by side in a fused projection output, rows (NH + 2 NKV) * HD + pad apart
// (pad not a multiple of 8: the one-value path). Forward: q and k by separate calls;
// backward: one call over NH + NKV heads. v and the padding must stay as they were.
void test_rope(Rng& rng, int B, int T, int NH, int NKV, int HD, int pad, double theta) {
  const std::string shape =
      shape_of({{"B", B}, {"T", T}, {"NH", NH}, {"NKV", NKV}, {"HD", HD}, {"pad", pad}, {"theta", static_cast<long long>(theta)}});
  const int rows = B * T, width = (NH + 2 * NKV) * HD, stride = width + pad;
  const std::size_t n = static_cast<std::size_t>(rows) * stride;
  const RopeTable table(T, HD, theta);
  auto rotated = [&](std::size_t i) { return static_cast<int>(i % stride) < (NH + NKV) * HD; };
  auto untouched = [&](std::size_t i) { return !rotated(i); };
  auto reference = [&](const std::vector<float>& in, double sign) {
    std::vector<double> ref = to_double(in);
    for (int r = 0; r < rows; ++r)
      for (int h = 0; h < NH + NKV; ++h) rope_head(&ref[static_cast<std::size_t>(r) * stride + h * HD], table, r % T, sign);
    return ref;
  };

  const auto qkv = random_bf16(rng, n, -2, 2);
  Tensor d_qkv(qkv);
  kn::rope_forward(d_qkv.get(), rows, T, NH, HD, stride, theta, nullptr);
  kn::rope_forward(d_qkv.get() + NH * HD, rows, T, NKV, HD, stride, theta, nullptr);
  sync();
  const auto ref = reference(qkv, 1.0);
  auto got = d_qkv.download();
  compare("rope_forward(q,k)", shape, got, ref, kTolBf16, rotated);
  compare("rope_forward(v,pad untouched)", shape, got, ref, kExact, untouched);

  const auto dqkv = random_bf16(rng, n, -1, 1);
  Tensor d_dqkv(dqkv);
  kn::rope_backward(d_dqkv.get(), rows, T, NH + NKV, HD, stride, theta, nullptr);
  sync();
  const auto ref_d = reference(dqkv, -1.0);
  got = d_dqkv.download();
  compare("rope_backward(dq,dk)", shape, got, ref_d, kTolBf16, rotated);
  compare("rope_backward(dv,pad untouched)", shape, got, ref_d, kExact, untouched);
}

// ---- SwiGLU ------------------------------------------------------------------------------

// fused: gate and up in one (N, 2I + pad) buffer (up = gate + I); else two (N, I) buffers.
// offset shifts every tensor by one element (misaligned: the one-value path).
void test_swiglu(Rng& rng, int N, int I, bool fused, int pad, int offset) {
  const std::string shape = shape_of({{"N", N}, {"I", I}, {"fused", fused}, {"pad", pad}, {"offset", offset}});
  const std::size_t NI = static_cast<std::size_t>(N) * I;
  const int in_stride = fused ? 2 * I + pad : I;
  const std::size_t n_in = static_cast<std::size_t>(N) * in_stride;

  // gate: mostly [-8, 8], with some far out (the sigmoid's saturation) and exact zeros.
  auto gate_up = random_bf16(rng, fused ? n_in : 2 * NI, -2, 2);
  auto gate_at = [&](int r, int i) -> float& {
    return fused ? gate_up[static_cast<std::size_t>(r) * in_stride + i] : gate_up[static_cast<std::size_t>(r) * I + i];
  };
  auto up_at = [&](int r, int i) -> float& {
    return fused ? gate_up[static_cast<std::size_t>(r) * in_stride + I + i] : gate_up[NI + static_cast<std::size_t>(r) * I + i];
  };
  const float extremes[] = {-100.f, -30.f, -12.f, 0.f, 12.f, 30.f, 100.f};
  for (int r = 0; r < N; ++r)
    for (int i = 0; i < I; ++i) {
      const int pick = rng.below(50);
      gate_at(r, i) = pick < 7 ? extremes[pick] : round_bf16(static_cast<float>(rng.uniform(-8, 8)));
    }
  const auto dh = random_bf16(rng, NI, -1, 1);

  std::vector<double> ref_h(NI), ref_dgate(NI), ref_dup(NI);
  for (int r = 0; r < N; ++r)
    for (int i = 0; i < I; ++i) {
      const std::size_t k = static_cast<std::size_t>(r) * I + i;
      const double g = gate_at(r, i), u = up_at(r, i);
      ref_h[k] = silu(g) * u;
      ref_dgate[k] = dh[k] * u * silu_grad(g);
      ref_dup[k] = dh[k] * silu(g);
    }

  // Views of an (N, I) tensor inside a strided host buffer, and back.
  auto rows_of = [&](const std::vector<float>& buf, std::size_t start, int stride) {
    std::vector<float> v(NI);
    for (int r = 0; r < N; ++r)
      for (int i = 0; i < I; ++i) v[static_cast<std::size_t>(r) * I + i] = buf[start + static_cast<std::size_t>(r) * stride + i];
    return v;
  };
  const std::size_t up_start = fused ? I : NI;
  const int up_stride = in_stride;  // both layouts: gate and up rows in_stride apart

  Tensor d_in(gate_up, offset), d_dh(dh, offset);
  const bf16* gate = d_in.get();
  const bf16* up = d_in.get() + up_start;

  Tensor d_h(std::vector<float>(NI, 7.f), offset);
  kn::swiglu_forward(d_h.get(), I, gate, up, in_stride, N, I, nullptr);
  sync();
  compare("swiglu_forward", shape, d_h.download(), ref_h, kTolBf16);

  Tensor d_grad(std::vector<float>(2 * NI, 7.f), offset);  // (N, 2I): dgate | dup per row
  kn::swiglu_backward(d_grad.get(), d_grad.get() + I, 2 * I, d_dh.get(), I, gate, up, in_stride, N, I, nullptr);
  sync();
  auto grad = d_grad.download();
  compare("swiglu_backward(dgate)", shape, rows_of(grad, 0, 2 * I), ref_dgate, kTolBf16);
  compare("swiglu_backward(dup)", shape, rows_of(grad, I, 2 * I), ref_dup, kTolBf16);

  // In place: h over gate (up stays), then the gradients over gate and up.
  Tensor d_work(gate_up, offset);
  kn::swiglu_forward(d_work.get(), in_stride, d_work.get(), d_work.get() + up_start, in_stride, N, I, nullptr);
  sync();
  auto work = d_work.download();
  compare("swiglu_forward(h=gate,inplace)", shape, rows_of(work, 0, in_stride), ref_h, kTolBf16);
  compare_bits("swiglu_forward(inplace,up untouched)", shape, to_bf16(rows_of(work, up_start, up_stride)),
               to_bf16(rows_of(gate_up, up_start, up_stride)));
  d_work.upload(gate_up);
  kn::swiglu_backward(d_work.get(), d_work.get() + up_start, in_stride, d_dh.get(), I, d_work.get(),
                      d_work.get() + up_start, in_stride, N, I, nullptr);
  sync();
  work = d_work.download();
  compare("swiglu_backward(dgate=gate,inplace)", shape, rows_of(work, 0, in_stride), ref_dgate, kTolBf16);
  compare("swiglu_backward(dup=up,inplace)", shape, rows_of(work, up_start, up_stride), ref_dup, kTolBf16);
}

// ---- LoRA dropout ------------------------------------------------------------------------

// The documented mask, computed here from its description (kernels.h), not from the header's
// functions: a check that the kernels do what the header says.
struct Replay {
  std::uint64_t stream;
  std::uint64_t threshold;
  Replay(const kn::DropoutKey& k, double p)
      : stream(splitmix64(splitmix64(splitmix64(k.seed) ^ k.step) ^ ((static_cast<std::uint64_t>(k.layer) << 32) | k.target))),
        threshold(std::min<std::uint64_t>(static_cast<std::uint64_t>(std::nearbyint(p * 4294967296.0)), 0xffffffffull)) {}
  bool keep(std::uint64_t e) const {
    const std::uint64_t bits = splitmix64(stream + (e / 2) * 0x9e3779b97f4a7c15ull);
    const std::uint64_t u = (e & 1) ? bits >> 32 : bits & 0xffffffffull;
    return u >= threshold;
  }
};

// One fp32 multiply, rounded to bf16 (and one fp32 add first when accumulating). volatile
// keeps the host compiler from fusing them into an FMA.
float dropped(float x, bool keep, float scale) {
  const volatile float product = x * (keep ? scale : 0.f);
  return product;
}

// Adapters reading the same input (q, k, v), each with its own key: the one-pass forward
// gives each adapter's lora_dropout_forward bits, and the one-pass fp32 backward the bits of
// adding each adapter's masked gradient in turn (each add rounded to fp32, replayed here).
void test_shared_dropout(Rng& rng, int N, int in, double p, int pad, const kn::DropoutKey& key,
                         const std::vector<float>& xbuf) {
  const std::string shape = shape_of({{"N", N}, {"in", in}, {"pad", pad}, {"p_permille", std::lround(p * 1000)}});
  const std::size_t n = static_cast<std::size_t>(N) * in;
  const int x_stride = in + pad;
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  const kn::DropoutKey keys[3] = {key, {key.seed, key.step, key.layer, key.target + 1},
                                  {key.seed, key.step, key.layer, key.target + 2}};
  Tensor d_x(xbuf);
  // Outputs and gradients `pad` elements into their allocations too (pad 1: the one-value path).
  std::vector<std::unique_ptr<Tensor>> outs, singles;  // Tensor does not move
  for (int t = 0; t < 3; ++t) {
    outs.push_back(std::make_unique<Tensor>(std::vector<float>(n, 7.f), pad % 8));
    singles.push_back(std::make_unique<Tensor>(std::vector<float>(n, 7.f), pad % 8));
  }
  bf16* out_ptrs[3] = {outs[0]->get(), outs[1]->get(), outs[2]->get()};
  kn::lora_dropout_forward_shared(out_ptrs, keys, 3, in, d_x.get(), x_stride, N, in, p, nullptr);
  for (int t = 0; t < 3; ++t)
    kn::lora_dropout_forward(singles[t]->get(), in, d_x.get(), x_stride, N, in, p, keys[t], nullptr, nullptr);
  sync();
  for (int t = 0; t < 3; ++t)
    compare_bits("lora_dropout_forward_shared(t=" + std::to_string(t) + ")=single", shape, outs[t]->bits(),
                 singles[t]->bits());

  std::vector<std::vector<float>> g;
  std::vector<std::unique_ptr<Tensor>> d_g;
  for (int t = 0; t < 3; ++t) {
    g.push_back(random_bf16(rng, n, -1, 1));
    d_g.push_back(std::make_unique<Tensor>(g.back(), pad % 8));
  }
  const bf16* g_ptrs[3] = {d_g[0]->get(), d_g[1]->get(), d_g[2]->get()};
  std::vector<float> dx0(n);
  for (auto& v : dx0) v = static_cast<float>(rng.uniform(-2, 2));
  for (int count : {1, 3}) {
    std::vector<float> ref = dx0;
    for (int t = 0; t < count; ++t) {
      const Replay replay(keys[t], p);
      for (std::size_t e = 0; e < n; ++e) {
        const volatile float product = g[t][e] * (replay.keep(e) ? scale : 0.f);
        const volatile float sum = ref[e] + product;
        ref[e] = sum;
      }
    }
    // dx rows in + pad apart: the fp32 destination's stride may differ from the gradients'.
    std::vector<float> dx_host(static_cast<std::size_t>(N) * (in + pad), -3.f);
    for (std::size_t e = 0; e < n; ++e) dx_host[(e / in) * (in + pad) + e % in] = dx0[e];
    Buffer<float> d_dx(dx_host);
    if (count == 1)
      kn::lora_dropout_backward_fp32(d_dx.get(), in + pad, g_ptrs[0], in, N, in, p, keys[0], nullptr);
    else
      kn::lora_dropout_backward_fp32_shared(d_dx.get(), in + pad, g_ptrs, keys, count, in, N, in, p, nullptr);
    sync();
    const auto got_all = d_dx.download();
    std::vector<float> got(n);
    bool pad_untouched = true;
    for (std::size_t i = 0; i < got_all.size(); ++i) {
      const std::size_t row = i / (in + pad), col = i % (in + pad);
      if (col < static_cast<std::size_t>(in))
        got[row * in + col] = got_all[i];
      else
        pad_untouched = pad_untouched && got_all[i] == -3.f;
    }
    const std::string name = "lora_dropout_backward_fp32(" + std::string(count == 1 ? "one" : "shared,3") + ")";
    compare_bits(name + "=replay", shape, got, ref);
    report(name + "(row padding untouched)", shape, 0.0, 0.0, kExact, pad_untouched);
  }
}

// x rows x_stride = in + pad apart, out rows in apart.
void test_dropout(Rng& rng, int N, int in, double p, int pad) {
  const std::string shape = shape_of({{"N", N}, {"in", in}, {"pad", pad}, {"p_permille", std::lround(p * 1000)}});
  const std::size_t n = static_cast<std::size_t>(N) * in;
  const int x_stride = in + pad;
  const kn::DropoutKey key{20240611, 7, 3, 2};
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  const Replay replay(key, p);

  const auto xbuf = random_bf16(rng, static_cast<std::size_t>(N) * x_stride, -4, 4);
  auto x_at = [&](std::size_t e) { return xbuf[(e / in) * x_stride + e % in]; };
  Tensor d_x(xbuf);
  Tensor d_out(std::vector<float>(n, 7.f));
  Buffer<std::uint8_t> d_mask(n);
  kn::lora_dropout_forward(d_out.get(), in, d_x.get(), x_stride, N, in, p, key, d_mask.get(), nullptr);
  sync();
  const auto mask = d_mask.download();
  const auto out_bits = d_out.bits();

  std::vector<std::uint8_t> ref_mask(n);
  std::vector<float> ref_out(n);
  std::size_t dropped_count = 0;
  for (std::size_t e = 0; e < n; ++e) {
    ref_mask[e] = replay.keep(e) ? 1 : 0;
    ref_out[e] = dropped(x_at(e), ref_mask[e] != 0, scale);
    dropped_count += mask[e] == 0;
  }
  compare_bits("lora_dropout_forward(mask=replay)", shape, mask, ref_mask);
  compare_bits("lora_dropout_forward(out=bf16(x*m))", shape, out_bits, to_bf16(ref_out));
  check_rate("lora_dropout_forward(drop rate)", shape, dropped_count, n, static_cast<double>(replay.threshold) * 0x1p-32);

  // The header's host function is the same mask (a CPU reference may use it).
  bool header_same = true;
  const std::uint64_t stream = kn::dropout_stream(key);
  const std::uint32_t threshold = kn::dropout_threshold(p);
  for (std::size_t e = 0; e < std::min<std::size_t>(n, 4096); ++e)
    header_same = header_same && kn::dropout_keep(stream, e, threshold) == (ref_mask[e] != 0);
  report("dropout_keep(host)=replay", shape, header_same ? 0.0 : NAN, header_same ? 0.0 : NAN, kExact, header_same);

  // Deterministic, and the same without the mask output.
  Tensor d_out2(std::vector<float>(n, 7.f));
  kn::lora_dropout_forward(d_out2.get(), in, d_x.get(), x_stride, N, in, p, key, nullptr, nullptr);
  sync();
  compare_bits("lora_dropout_forward(repeat,no mask)", shape, out_bits, d_out2.bits());

  // Another seed, step, layer or target: another mask, differing in about 2p(1-p) of the places.
  if (p > 0) {
    const double q = replay.threshold * 0x1p-32, differ = 2 * q * (1 - q);
    const std::pair<const char*, kn::DropoutKey> others[] = {{"seed+1", {key.seed + 1, key.step, key.layer, key.target}},
                                                             {"step+1", {key.seed, key.step + 1, key.layer, key.target}},
                                                             {"layer+1", {key.seed, key.step, key.layer + 1, key.target}},
                                                             {"target+1", {key.seed, key.step, key.layer, key.target + 1}}};
    for (const auto& [what, other] : others) {
      Buffer<std::uint8_t> d_mask2(n);
      kn::lora_dropout_forward(d_out2.get(), in, d_x.get(), x_stride, N, in, p, other, d_mask2.get(), nullptr);
      sync();
      const auto mask2 = d_mask2.download();
      std::size_t diff = 0;
      for (std::size_t e = 0; e < n; ++e) diff += mask2[e] != mask[e];
      check_rate(std::string("lora_dropout(") + what + ",mask differs)", shape, diff, n, differ);
    }
  }

  // Backward: the same mask on a gradient; overwriting, accumulating, and in place.
  const auto g = random_bf16(rng, n, -1, 1), dx0 = random_bf16(rng, n, -1, 1);
  std::vector<float> ref_dx(n), ref_acc(n);
  for (std::size_t e = 0; e < n; ++e) {
    ref_dx[e] = dropped(g[e], ref_mask[e] != 0, scale);
    const volatile float sum = dx0[e] + ref_dx[e];
    ref_acc[e] = sum;
  }
  Tensor d_g(g), d_dx(std::vector<float>(n, NAN));
  kn::lora_dropout_backward(d_dx.get(), in, d_g.get(), in, N, in, p, key, false, nullptr);
  sync();
  compare_bits("lora_dropout_backward(dx=g*m)", shape, d_dx.bits(), to_bf16(ref_dx));
  d_dx.upload(dx0);
  kn::lora_dropout_backward(d_dx.get(), in, d_g.get(), in, N, in, p, key, true, nullptr);
  sync();
  compare_bits("lora_dropout_backward(dx+=g*m)", shape, d_dx.bits(), to_bf16(ref_acc));
  kn::lora_dropout_backward(d_g.get(), in, d_g.get(), in, N, in, p, key, false, nullptr);
  sync();
  compare_bits("lora_dropout_backward(dx=g,inplace)", shape, d_g.bits(), to_bf16(ref_dx));

  test_shared_dropout(rng, N, in, p, pad, key, xbuf);
}

// ---- edges -------------------------------------------------------------------------------

// N == 0 launches nothing and fails nothing; bad arguments throw std::invalid_argument.
void test_edges() {
  const std::string shape = "-";
  Buffer<bf16> a(64), b(64);
  Buffer<float> f(64);
  kn::rmsnorm_forward(a.get(), f.get(), b.get(), b.get(), 0, 8, 1e-6f, nullptr);
  kn::rmsnorm_backward(a.get(), f.get(), b.get(), b.get(), b.get(), f.get(), 0, 8, true, nullptr);
  kn::rope_forward(a.get(), 0, 4, 2, 8, 16, 1e4, nullptr);
  kn::rope_backward(a.get(), 0, 4, 2, 8, 16, 1e4, nullptr);
  kn::swiglu_forward(a.get(), 8, b.get(), b.get(), 8, 0, 8, nullptr);
  kn::swiglu_backward(a.get(), a.get(), 8, b.get(), 8, b.get(), b.get(), 8, 0, 8, nullptr);
  kn::lora_dropout_forward(a.get(), 8, b.get(), 8, 0, 8, 0.1, {}, nullptr, nullptr);
  sync();
  report("zero rows", shape, 0.0, 0.0, kExact, true);

  int refused = 0, cases = 0;
  auto expect_refused = [&](const std::function<void()>& call) {
    ++cases;
    try {
      call();
    } catch (const std::invalid_argument&) {
      ++refused;
    }
  };
  expect_refused([&] { kn::rope_forward(a.get(), 2, 2, 1, 7, 8, 1e4, nullptr); });         // odd HD
  expect_refused([&] { kn::rope_forward(a.get(), 2, 2, 2, 8, 8, 1e4, nullptr); });         // stride < heads*HD
  expect_refused([&] { kn::rope_forward(a.get(), 2, 2, 1, 8, 8, 0.0, nullptr); });         // theta
  expect_refused([&] { kn::swiglu_forward(a.get(), 4, b.get(), b.get(), 8, 2, 8, nullptr); });  // h_stride < I
  expect_refused([&] { kn::lora_dropout_forward(a.get(), 8, b.get(), 8, 2, 8, 1.0, {}, nullptr, nullptr); });  // p
  expect_refused([&] { kn::rmsnorm_forward(a.get(), f.get(), b.get(), b.get(), 2, 0, 1e-6f, nullptr); });    // C
  sync();
  report("bad arguments refused", shape, cases - refused, 0.0, kExact, refused == cases);
}

// Runs one test; an exception (a launch error, say) counts as a failure and is reported.
void run(const char* what, const std::function<void()>& test) {
  try {
    test();
  } catch (const std::exception& e) {
    std::printf("kernel %-34s ERROR: %s FAIL\n", what, e.what());
    ++g_failures;
  }
}

// train/checksum_kernels.h: the GPU's checksum equals the host's for sizes with and without a
// tail shorter than 8 bytes, and one flipped bit changes it.
void test_checksum(Rng& rng, std::size_t bytes) {
  std::vector<unsigned char> host(bytes);
  for (auto& b : host) b = static_cast<unsigned char>(rng.next() & 0xff);
  Buffer<unsigned char> dev(host);
  Buffer<std::uint64_t> out(1);
  const auto device_sum = [&] {
    gpuaccept::train::checksum_device(out.get(), dev.get(), bytes, nullptr);
    return out.download()[0];
  };
  const std::uint64_t want = gpuaccept::train::checksum_host(host.data(), bytes);
  const std::uint64_t got = device_sum();
  const std::size_t at = rng.next() % bytes;
  host[at] ^= 0x10;
  dev.upload(host);
  const bool changes = device_sum() != got && gpuaccept::train::checksum_host(host.data(), bytes) != want;
  const std::string shape = "bytes=" + std::to_string(bytes);
  report("checksum device=host", shape, got == want ? 0.0 : NAN, 0.0, kExact, got == want);
  report("checksum sees a flipped bit", shape, changes ? 0.0 : NAN, 0.0, kExact, changes);
}

}  // namespace

int main(int argc, char** argv) {
  const bool small = argc > 1 && std::string(argv[1]) == "--small";
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    std::printf("fsdp-kernel-tests: no CUDA device\n");
    return 1;
  }
  std::printf("fsdp-kernel-tests on %s (sm_%d%d)%s\n", prop.name, prop.major, prop.minor, small ? " --small" : "");
  Rng rng{20240611};

  run("cpu_reference", [&] { test_cpu_gradients(rng); });

  for (std::size_t bytes : {std::size_t{8}, std::size_t{13}, std::size_t{4096}, (std::size_t{1} << 20) + 5})
    run("checksum", [&] { test_checksum(rng, bytes); });

  // Odd sizes (C, I, in not multiples of 8, misaligned pointers, strides with padding) take the
  // one-value paths and ragged tails; the others the 16-byte paths; the last of each is
  // Qwen2-7B's shape at B = 1, T = 4096 (fewer rows for the MLP's width).
  run("rmsnorm", [&] { test_rmsnorm(rng, 37, 72, 0); });
  run("rmsnorm", [&] { test_rmsnorm(rng, 37, 37, 0); });
  run("rmsnorm", [&] { test_rmsnorm(rng, 19, 72, 1); });
  run("rmsnorm", [&] { test_rmsnorm(rng, 5, 8192, 0); });
  run("rmsnorm", [&] { test_rmsnorm(rng, 3, 3584, 0); });
  run("rmsnorm", [&] { if (!small) test_rmsnorm(rng, 4096, 3584, 0); });

  run("rope_table", [&] { test_rope_table(37, 6, 1e4); });
  run("rope_table", [&] { if (!small) test_rope_table(32768, 128, 1e6); });

  run("rope", [&] { test_rope(rng, 2, 37, 4, 2, 64, 0, 1e4); });    // 16-byte path, heads not a multiple of 4 per block
  run("rope", [&] { test_rope(rng, 3, 5, 4, 2, 4, 0, 1e4); });      // qwen_tiny's HD = 4
  run("rope", [&] { test_rope(rng, 2, 19, 3, 1, 24, 3, 1e6); });    // HD/2 = 12 and an odd stride: one value
  run("rope", [&] { test_rope(rng, 1, 9, 5, 5, 16, 8, 1e6); });     // padded stride, still 16-byte
  run("rope", [&] { if (!small) test_rope(rng, 1, 4096, 28, 4, 128, 0, 1e6); });
  run("rope", [&] { if (!small) test_rope(rng, 1, 32768, 1, 1, 128, 0, 1e6); });  // positions up to 32767

  run("swiglu", [&] { test_swiglu(rng, 37, 37, true, 0, 0); });   // up = gate + 37: one value
  run("swiglu", [&] { test_swiglu(rng, 37, 72, true, 0, 0); });
  run("swiglu", [&] { test_swiglu(rng, 13, 40, false, 0, 0); });
  run("swiglu", [&] { test_swiglu(rng, 11, 72, true, 8, 1); });   // misaligned
  run("swiglu", [&] { if (!small) test_swiglu(rng, 512, 18944, true, 0, 0); });

  run("lora_dropout", [&] { test_dropout(rng, 37, 37, 0.05, 0); });
  run("lora_dropout", [&] { test_dropout(rng, 37, 72, 0.5, 8); });
  run("lora_dropout", [&] { test_dropout(rng, 13, 72, 0.05, 1); });  // odd stride: one value
  run("lora_dropout", [&] { test_dropout(rng, 29, 40, 0.0, 0); });   // p = 0: an exact copy
  run("lora_dropout", [&] { if (!small) test_dropout(rng, 4096, 3584, 0.05, 0); });
  run("lora_dropout", [&] { if (!small) test_dropout(rng, 512, 18944, 0.1, 0); });

  run("edges", [&] { test_edges(); });

  std::printf("fsdp-kernel-tests: %s (%d failed)\n", g_failures == 0 ? "PASS" : "FAIL", g_failures);
  return g_failures == 0 ? 0 : 1;
}
