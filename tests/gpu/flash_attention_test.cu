// flash-attention-tests: the causal flash attention both training phases share
// (train/flash_attention_kernels.h) against the float64 loop of attention_reference.h, at both
// head sizes (64: ddp's GPT-2; 128: fsdp-lora's Qwen2, with grouped key/value heads), for every
// forward and backward variant this build and GPU run, in both layouts the phases use:
// token-major q, k, v apart (fsdp-lora) and packed in one (B, T, 3, NH, HD) projection output
// (ddp). One line per check:
//   flash reference <fwd/bwd variants> <shape> <layout> <y|dq|dk|dv> rel_l2=... tol=... PASS|FAIL
//   flash deterministic <...>          a second forward and backward: the same bits
//   flash layouts_agree <...>          packed q, k, v (rows 3 NH HD) give the token-major bits
//   flash column_sums <...>            where the backward sums dq, dk, dv's columns by blocks of
//                                      64 positions (FlashColumnSums): those of the values it
//                                      stored; deterministic and the same in both layouts too
// and "flash info timing ..." lines (not checks): forward and backward ms, TFLOP/s and each
// kernel's registers, shared memory and CTAs per SM, at ddp's shape (B 16, T 1024, 12 heads of
// 64, packed, with the column sums) and fsdp-lora's (B 2, T 4096, 28/4 heads of 128, without).
// Exit status 1 if any check fails.
//   build/bin/flash-attention-tests           (needs a GPU; ~15 s on an H100, mostly the float64 loop)
//   build/bin/flash-attention-tests --no-timing
//   build/bin/flash-attention-tests --timing-only  (the timing alone: for a profiler, or an A/B of two builds)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "attention_reference.h"
#include "test_rng.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_handles.h"
#include "train/flash_attention_kernels.h"

namespace {

namespace tr = gpuaccept::train;
using bf16 = __nv_bfloat16;
using gpuaccept::DeviceBuffer;

int g_failures = 0;

void check_line(const std::string& check, const std::string& name, const std::string& numbers, bool pass) {
  std::printf("flash %s %s %s %s\n", check.c_str(), name.c_str(), numbers.c_str(), pass ? "PASS" : "FAIL");
  std::fflush(stdout);
  if (!pass) ++g_failures;
}

// An exception inside a check is that check's FAIL, with the message (a CUDA error names its call).
void guarded(const std::string& name, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    check_line("error", name, std::string("ERROR: ") + e.what(), false);
  }
}

using gpuaccept::test::Rng;  // test_rng.h

// Values already bf16, so the float64 loop and the GPU start from the same numbers.
std::vector<double> random_bf16_values(std::size_t n, double half_width, Rng& rng) {
  std::vector<double> v(n);
  for (double& x : v)
    x = static_cast<double>(
        __bfloat162float(__float2bfloat16(static_cast<float>(rng.uniform(-half_width, half_width)))));
  return v;
}

double rel_l2(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size(); ++i) num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
  return std::sqrt(num / std::max(den, 1e-300));
}

DeviceBuffer<bf16> upload(const std::vector<double>& host) {
  std::vector<bf16> h(host.size());
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = __float2bfloat16(static_cast<float>(host[i]));
  DeviceBuffer<bf16> d(h.size());
  GPUACCEPT_CUDA_CHECK(cudaMemcpy(d.get(), h.data(), h.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  return d;
}
std::vector<double> download(const bf16* d, std::size_t n) {
  std::vector<bf16> h(n);
  GPUACCEPT_CUDA_CHECK(cudaMemcpy(h.data(), d, n * sizeof(bf16), cudaMemcpyDeviceToHost));
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = __bfloat162float(h[i]);
  return out;
}

struct Shape {
  int B, T, NH, NKV, HD;
  std::string name() const {
    return "B" + std::to_string(B) + "_T" + std::to_string(T) + "_NH" + std::to_string(NH) + "_NKV" +
           std::to_string(NKV) + "_HD" + std::to_string(HD);
  }
  std::size_t nq() const { return static_cast<std::size_t>(B) * T * NH * HD; }
  std::size_t nkv() const { return static_cast<std::size_t>(B) * T * NKV * HD; }
};

struct Variants {
  int fwd, bwd;
  std::string name() const { return "fwd" + std::to_string(fwd) + "/bwd" + std::to_string(bwd); }
};

// Every variant this build and GPU run: each backward with forward 0, each other forward with
// the default backward.
std::vector<Variants> available_variants() {
  std::vector<Variants> out;
  for (int b = 0; b < tr::kFlashBackwardVariants; ++b)
    if (tr::flash_backward_variant_available(b)) out.push_back({0, b});
  for (int f = 1; f < tr::kFlashForwardVariants; ++f)
    if (tr::flash_forward_variant_available(f)) out.push_back({f, tr::flash_backward_default_variant()});
  return out;
}

// The inputs on the device in one layout, and the outputs read back token-major.
class Run {
 public:
  Run(const Shape& s, bool packed, const std::vector<double>& q, const std::vector<double>& k,
      const std::vector<double>& v, const std::vector<double>& dy)
      : s_(s), packed_(packed) {
    const std::size_t rows = static_cast<std::size_t>(s.B) * s.T, C = static_cast<std::size_t>(s.NH) * s.HD;
    if (packed) {  // (B, T, 3, NH, HD): q, k, v side by side in each row (NKV == NH)
      std::vector<double> qkv(3 * rows * C);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < C; ++c) {
          qkv[r * 3 * C + c] = q[r * C + c];
          qkv[r * 3 * C + C + c] = k[r * C + c];
          qkv[r * 3 * C + 2 * C + c] = v[r * C + c];
        }
      in_ = upload(qkv);
      grads_ = DeviceBuffer<bf16>(3 * rows * C);
      shape_ = tr::FlashShape::packed_qkv(s.B, s.T, s.NH, s.HD);
      q_ = in_.get(), k_ = q_ + C, v_ = q_ + 2 * C;
      dq_ = grads_.get(), dk_ = dq_ + C, dv_ = dq_ + 2 * C;
    } else {
      std::vector<double> all(q);
      all.insert(all.end(), k.begin(), k.end());
      all.insert(all.end(), v.begin(), v.end());
      in_ = upload(all);
      grads_ = DeviceBuffer<bf16>(all.size());
      shape_ = tr::FlashShape::token_major(s.B, s.T, s.NH, s.NKV, s.HD);
      q_ = in_.get(), k_ = q_ + s.nq(), v_ = k_ + s.nkv();
      dq_ = grads_.get(), dk_ = dq_ + s.nq(), dv_ = dk_ + s.nkv();
    }
    dy_ = upload(dy);
    y_ = DeviceBuffer<bf16>(s.nq());
    lse_ = DeviceBuffer<float>(static_cast<std::size_t>(s.B) * s.NH * s.T);
    delta_ = DeviceBuffer<float>(lse_.size());
    ds_ = DeviceBuffer<bf16>(tr::flash_backward_ds_workspace_elems(s.B, s.T, s.NH));
    // Column sums: (B T/64) rows as wide as the layout's rows of q (dq's) and of k, v.
    const std::size_t blocks = static_cast<std::size_t>(s.B) * s.T / kSumBlock;
    dq_sums_ = DeviceBuffer<float>(blocks * shape_.q_row);
    dk_sums_ = DeviceBuffer<float>(blocks * shape_.kv_row);
    dv_sums_ = DeviceBuffer<float>(blocks * shape_.kv_row);
  }
  static constexpr int kSumBlock = tr::kFlashBlock;  // positions a row of column sums covers
  void forward(Variants v, cudaStream_t st) {
    tr::flash_attention_forward(y_.get(), lse_.get(), q_, k_, v_, shape_, st, v.fwd);
  }
  // With the column sums where the variant writes them and `with_sums` (as ddp calls it).
  void backward(Variants v, cudaStream_t st, bool with_sums = true) {
    const tr::FlashColumnSums sums = with_sums && tr::flash_backward_sums_columns(v.bwd)
                                         ? tr::FlashColumnSums{dq_sums_.get(), dk_sums_.get(), dv_sums_.get()}
                                         : tr::FlashColumnSums{};
    tr::flash_attention_backward(dq_, dk_, dv_, delta_.get(), dy_.get(), y_.get(), lse_.get(), q_, k_, v_, shape_, st,
                                 v.bwd, ds_.get(), sums);
  }
  // The column sums, (B T/64, NH HD) for dq then (B T/64, NKV HD) for dk and dv, one vector.
  std::vector<float> read_sums() const {
    GPUACCEPT_CUDA_CHECK(cudaDeviceSynchronize());
    const std::size_t blocks = static_cast<std::size_t>(s_.B) * s_.T / kSumBlock;
    std::vector<float> out;
    const std::pair<const DeviceBuffer<float>*, std::pair<std::size_t, std::size_t>> parts[] = {
        {&dq_sums_, {shape_.q_row, static_cast<std::size_t>(s_.NH) * s_.HD}},
        {&dk_sums_, {shape_.kv_row, static_cast<std::size_t>(s_.NKV) * s_.HD}},
        {&dv_sums_, {shape_.kv_row, static_cast<std::size_t>(s_.NKV) * s_.HD}}};
    for (const auto& [buffer, widths] : parts) {
      std::vector<float> all(blocks * widths.first);
      GPUACCEPT_CUDA_CHECK(cudaMemcpy(all.data(), buffer->get(), all.size() * sizeof(float), cudaMemcpyDeviceToHost));
      for (std::size_t r = 0; r < blocks; ++r)
        out.insert(out.end(), all.begin() + static_cast<long>(r * widths.first),
                   all.begin() + static_cast<long>(r * widths.first + widths.second));
    }
    return out;
  }
  // y, dq, dk, dv token-major.
  gpuaccept::test::AttentionGrads read() const {
    GPUACCEPT_CUDA_CHECK(cudaDeviceSynchronize());
    gpuaccept::test::AttentionGrads g;
    g.y = download(y_.get(), s_.nq());
    if (!packed_) {
      g.dq = download(dq_, s_.nq()), g.dk = download(dk_, s_.nkv()), g.dv = download(dv_, s_.nkv());
      return g;
    }
    const std::size_t rows = static_cast<std::size_t>(s_.B) * s_.T, C = static_cast<std::size_t>(s_.NH) * s_.HD;
    const std::vector<double> all = download(grads_.get(), 3 * rows * C);
    for (auto* part : {&g.dq, &g.dk, &g.dv}) part->resize(rows * C);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < C; ++c) {
        g.dq[r * C + c] = all[r * 3 * C + c];
        g.dk[r * C + c] = all[r * 3 * C + C + c];
        g.dv[r * C + c] = all[r * 3 * C + 2 * C + c];
      }
    return g;
  }

 private:
  Shape s_;
  bool packed_;
  tr::FlashShape shape_;
  DeviceBuffer<bf16> in_, grads_, dy_, y_, ds_;
  DeviceBuffer<float> lse_, delta_, dq_sums_, dk_sums_, dv_sums_;
  const bf16 *q_ = nullptr, *k_ = nullptr, *v_ = nullptr;
  bf16 *dq_ = nullptr, *dk_ = nullptr, *dv_ = nullptr;
};

bool same_bits(const gpuaccept::test::AttentionGrads& a, const gpuaccept::test::AttentionGrads& b) {
  return a.y == b.y && a.dq == b.dq && a.dk == b.dk && a.dv == b.dv;
}

// The column sums the backward wrote (Run::read_sums) against those of the outputs it stored:
// per block of 64 positions, in float64. Each error is taken relative to the sum of the
// magnitudes summed (fp32 sums of 64 values: about 64 x 2^-24 of it at worst).
void check_column_sums(const std::string& label, const Shape& s, const std::vector<float>& sums,
                       const gpuaccept::test::AttentionGrads& got) {
  const std::size_t blocks = static_cast<std::size_t>(s.B) * s.T / Run::kSumBlock;
  std::size_t at = 0;
  double worst = 0;
  for (const auto* part : {&got.dq, &got.dk, &got.dv}) {
    const std::size_t width = part->size() / (static_cast<std::size_t>(s.B) * s.T);
    for (std::size_t r = 0; r < blocks; ++r)
      for (std::size_t c = 0; c < width; ++c, ++at) {
        double want = 0, magnitude = 0;
        for (std::size_t p = 0; p < static_cast<std::size_t>(Run::kSumBlock); ++p) {
          const double x = (*part)[(r * Run::kSumBlock + p) * width + c];
          want += x, magnitude += std::abs(x);
        }
        worst = std::max(worst, std::abs(sums[at] - want) / std::max(magnitude, 1e-30));
      }
  }
  constexpr double kTol = 1e-5;
  char numbers[96];
  std::snprintf(numbers, sizeof numbers, "max_err/sum|x|=%.3g tol=%.3g", worst, kTol);
  check_line("column_sums", label, numbers, at == sums.size() && worst <= kTol);
}

void test_shape(const Shape& s) {
  Rng rng{static_cast<std::uint64_t>(1000 + s.T + s.NH + s.HD)};
  // q wider than k: scores of std ~1.3 after the 1/sqrt(HD), a softmax far from flat
  const auto q = random_bf16_values(s.nq(), 2.0, rng), k = random_bf16_values(s.nkv(), 1.0, rng),
             v = random_bf16_values(s.nkv(), 1.0, rng), dy = random_bf16_values(s.nq(), 1.0, rng);
  const auto want = gpuaccept::test::attention_reference(q, k, v, dy, s.B, s.T, s.NH, s.NKV, s.HD);
  gpuaccept::CudaStream stream;
  // bf16 outputs: one rounding (2^-9 relative) plus fp32 sums and bf16 P/dS in the products
  constexpr double kTolY = 1e-2, kTolGrad = 2e-2;
  for (const Variants var : available_variants()) {
    gpuaccept::test::AttentionGrads token_major;
    std::vector<float> token_major_sums;
    for (const bool packed : {false, true}) {
      if (packed && s.NKV != s.NH) continue;  // ddp's packed rows hold one key/value head per query head
      const std::string label = var.name() + " " + s.name() + (packed ? " packed" : " token_major");
      Run run(s, packed, q, k, v, dy);
      run.forward(var, stream);
      run.backward(var, stream);
      const auto got = run.read();
      const std::pair<const char*, std::pair<const std::vector<double>*, const std::vector<double>*>> outs[] = {
          {"y", {&got.y, &want.y}},
          {"dq", {&got.dq, &want.dq}},
          {"dk", {&got.dk, &want.dk}},
          {"dv", {&got.dv, &want.dv}}};
      for (const auto& [what, pair] : outs) {
        const double err = rel_l2(*pair.first, *pair.second), tol = std::string(what) == "y" ? kTolY : kTolGrad;
        char numbers[96];
        std::snprintf(numbers, sizeof numbers, "rel_l2=%.3g tol=%.3g", err, tol);
        check_line("reference", label + " " + what, numbers, err <= tol);
      }
      const bool sums = tr::flash_backward_sums_columns(var.bwd);
      const std::vector<float> got_sums = sums ? run.read_sums() : std::vector<float>{};
      if (sums) check_column_sums(label, s, got_sums, got);
      run.forward(var, stream);
      run.backward(var, stream);
      const bool same = same_bits(run.read(), got) && (!sums || run.read_sums() == got_sums);
      check_line("deterministic", label, same ? "bitwise_equal=1" : "bitwise_equal=0", same);
      if (!packed) {
        token_major = got;
        token_major_sums = got_sums;
      } else {
        const bool agree = same_bits(got, token_major) && got_sums == token_major_sums;
        check_line("layouts_agree", var.name() + " " + s.name(), agree ? "bitwise_equal=1" : "bitwise_equal=0", agree);
      }
    }
  }
}

// "flash info timing ..." for every variant at one phase's shape: best and mean of `reps` after a warm-up.
void time_shape(const Shape& s, bool packed, int reps) {
  Rng rng{99};
  const auto q = random_bf16_values(s.nq(), 2.0, rng), k = random_bf16_values(s.nkv(), 1.0, rng),
             v = random_bf16_values(s.nkv(), 1.0, rng), dy = random_bf16_values(s.nq(), 1.0, rng);
  gpuaccept::CudaStream stream;
  // causal FLOPs: 2 products of 2 T^2/2 HD per head forward, 5 backward (with the recompute of P)
  const double flop_fwd = 2.0 * 2.0 * s.B * s.NH * (static_cast<double>(s.T) * s.T / 2) * s.HD,
               flop_bwd = 2.5 * flop_fwd;
  Run run(s, packed, q, k, v, dy);
  for (const Variants var : available_variants()) {
    std::string kernels;
    tr::FlashKernelResources res[3];
    const int n = tr::flash_kernel_resources(s.HD, var.bwd, res, var.fwd);
    for (int i = 0; i < n; ++i)
      kernels += " " + std::string(res[i].name) + "{regs=" + std::to_string(res[i].regs) +
                 " local=" + std::to_string(res[i].local_bytes) + " dyn_smem=" + std::to_string(res[i].dynamic_smem) +
                 " blocks_per_sm=" + std::to_string(res[i].blocks_per_sm) + "}";
    gpuaccept::CudaEvent e0, e1, e2;
    double fwd_best = 1e30, bwd_best = 1e30, fwd_sum = 0, bwd_sum = 0;
    for (int rep = -1; rep < reps; ++rep) {  // rep -1: warm-up
      e0.record(stream);
      run.forward(var, stream);
      e1.record(stream);
      run.backward(var, stream, /*with_sums=*/packed);  // ddp's call sums, fsdp-lora's does not
      e2.record(stream);
      const double f = e1.elapsed_ms_since(e0), b = e2.elapsed_ms_since(e1);
      if (rep < 0) continue;
      fwd_best = std::min(fwd_best, f), bwd_best = std::min(bwd_best, b), fwd_sum += f, bwd_sum += b;
    }
    std::printf(
        "flash info timing %s %s %s forward_ms=%.3f (mean %.3f, %.0f TFLOP/s) backward_ms=%.3f (mean %.3f, "
        "%.0f TFLOP/s) reps=%d%s\n",
        var.name().c_str(), s.name().c_str(), packed ? "packed" : "token_major", fwd_best, fwd_sum / reps,
        flop_fwd / fwd_best * 1e-9, bwd_best, bwd_sum / reps, flop_bwd / bwd_best * 1e-9, reps, kernels.c_str());
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool timing = mode != "--no-timing", checks = mode != "--timing-only";
  // T 192: forward variant 1 falls back to 64-query blocks; T 256: its 128-query blocks.
  if (checks)
    for (const Shape s :
         {Shape{2, 192, 4, 4, 64}, Shape{1, 256, 4, 2, 64}, Shape{2, 192, 4, 2, 128}, Shape{1, 256, 2, 2, 128}})
      guarded(s.name(), [&] { test_shape(s); });
  if (timing) {
    guarded("timing ddp", [] { time_shape({16, 1024, 12, 12, 64}, /*packed=*/true, 10); });
    guarded("timing fsdp-lora", [] { time_shape({2, 4096, 28, 4, 128}, /*packed=*/false, 5); });
  }
  std::printf("flash summary failures=%d%s\n", g_failures, checks ? "" : " (timing only: no checks ran)");
  return g_failures == 0 ? 0 : 1;
}
