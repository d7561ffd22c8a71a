#include "fsdp-lora/gpu/attention.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "train/causal_softmax_kernels.h"

namespace gpuaccept::fsdp::gpu {

namespace {

std::size_t sz(long long v) { return static_cast<std::size_t>(v); }

std::size_t checked_slot(int slot, std::size_t slots) {
  if (slot < 0 || static_cast<std::size_t>(slot) >= slots)
    throw std::invalid_argument(fmt::format("attention: slot {} outside 0..{}", slot, slots - 1));
  return static_cast<std::size_t>(slot);
}

}  // namespace

GemmAttention::GemmAttention(int B, int T, int NH, int NKV, int HD, int slots)
    : B_(B), T_(T), NH_(NH), NKV_(NKV), HD_(HD), G_(NKV > 0 ? NH / NKV : 0) {
  if (B < 1 || T < 1 || NH < 1 || NKV < 1 || HD < 1 || NH % NKV != 0 || slots < 1)
    throw std::invalid_argument(fmt::format(
        "attention: B={} T={} NH={} NKV={} HD={} slots={}: all positive, NH a multiple of NKV", B, T, NH, NKV, HD, slots));
  inputs_.resize(sz(slots));
  const long long q = 1LL * B * NH * T * HD, kv = 1LL * B * NKV * T * HD, tt = 1LL * B * NH * T * T;
  qh_ = DeviceBuffer<bf16>(sz(q));
  kh_ = DeviceBuffer<bf16>(sz(kv));
  vh_ = DeviceBuffer<bf16>(sz(kv));
  scores_ = DeviceBuffer<bf16>(sz(tt));
  att_ = DeviceBuffer<bf16>(sz(tt));
  yh_ = DeviceBuffer<bf16>(sz(q));
  dqh_ = DeviceBuffer<bf16>(sz(q));
  dkh_ = DeviceBuffer<bf16>(sz(kv));
  dvh_ = DeviceBuffer<bf16>(sz(kv));
}

std::size_t GemmAttention::device_bytes() const {
  std::size_t total = 0;
  for (const auto* b : {&qh_, &kh_, &vh_, &scores_, &att_, &yh_, &dqh_, &dkh_, &dvh_}) total += b->bytes();
  return total;
}

// All products below are per (b, kv head): batch = B * NKV, and each operand advances by its
// matrix per batch entry: a group's q (G*T, HD) by G*T*HD, a kv head's K or V (T, HD) by T*HD,
// a group's scores (G*T, T) by G*T*T.
void GemmAttention::forward(int slot, bf16* y, const bf16* q, const bf16* k, const bf16* v, Gemm& gemm,
                            cudaStream_t s) {
  inputs_[checked_slot(slot, inputs_.size())] = {y, q, k, v};
  softmax_slot_ = slot;
  const int B = B_, T = T_, NH = NH_, NKV = NKV_, HD = HD_, GT = G_ * T_;
  const long long sq = 1LL * GT * HD, skv = 1LL * T * HD, ss = 1LL * GT * T;
  heads_from_tokens(qh_.get(), q, NH * HD, B, T, NH, HD, s);
  heads_from_tokens(kh_.get(), k, NKV * HD, B, T, NKV, HD, s);
  heads_from_tokens(vh_.get(), v, NKV * HD, B, T, NKV, HD, s);
  // scores (G*T, T) = Qg (G*T, HD) K^T, K stored (T, HD)
  gemm.run({.M = GT, .N = T, .K = HD,
            .a = qh_.get(), .lda = HD, .stride_a = sq,
            .b = kh_.get(), .ldb = HD, .tb = true, .stride_b = skv,
            .d = scores_.get(), .ldd = T, .stride_d = ss,
            .batch = B * NKV},
           s);
  // att = causal softmax of scores / sqrt(HD), row by row (row g*T + t of a group is position t)
  train::causal_softmax_forward(att_.get(), scores_.get(), 1.0f / std::sqrt(static_cast<float>(HD)), B * NH, T, s);
  // yg (G*T, HD) = att (G*T, T) V (T, HD)
  gemm.run({.M = GT, .N = HD, .K = T,
            .a = att_.get(), .lda = T, .stride_a = ss,
            .b = vh_.get(), .ldb = HD, .stride_b = skv,
            .d = yh_.get(), .ldd = HD, .stride_d = sq,
            .batch = B * NKV},
           s);
  tokens_from_heads(y, NH * HD, yh_.get(), B, T, NH, HD, s);
}

void GemmAttention::backward(int slot, bf16* dq, bf16* dk, bf16* dv, const bf16* dy, Gemm& gemm, cudaStream_t s) {
  const Inputs in = inputs_[checked_slot(slot, inputs_.size())];
  if (!in.y) throw std::logic_error("gemm attention: backward() before forward() of its slot");
  // The softmax of another slot is held: this slot's again, from its inputs (the same bits).
  if (softmax_slot_ != slot) forward(slot, in.y, in.q, in.k, in.v, gemm, s);
  const int B = B_, T = T_, NH = NH_, NKV = NKV_, HD = HD_, GT = G_ * T_;
  const long long sq = 1LL * GT * HD, skv = 1LL * T * HD, ss = 1LL * GT * T;
  bf16* dyh = yh_.get();      // the forward's y is not needed any more
  bf16* datt = scores_.get();  // nor its scores
  heads_from_tokens(dyh, dy, NH * HD, B, T, NH, HD, s);
  // datt (G*T, T) = dYg (G*T, HD) V^T, V stored (T, HD)
  gemm.run({.M = GT, .N = T, .K = HD,
            .a = dyh, .lda = HD, .stride_a = sq,
            .b = vh_.get(), .ldb = HD, .tb = true, .stride_b = skv,
            .d = datt, .ldd = T, .stride_d = ss,
            .batch = B * NKV},
           s);
  // dV (T, HD) = att^T (T, G*T) dYg (G*T, HD), att stored (G*T, T): the sum over the group's
  // G heads is the product's own sum over its K = G*T
  gemm.run({.M = T, .N = HD, .K = GT,
            .a = att_.get(), .lda = T, .ta = true, .stride_a = ss,
            .b = dyh, .ldb = HD, .stride_b = sq,
            .d = dvh_.get(), .ldd = HD, .stride_d = skv,
            .batch = B * NKV},
           s);
  // dscores = softmax backward, with the 1/sqrt(HD) of the forward; in place over datt
  train::causal_softmax_backward(datt, datt, att_.get(), 1.0f / std::sqrt(static_cast<float>(HD)), B * NH, T, s);
  // dQg (G*T, HD) = dscores (G*T, T) K (T, HD)
  gemm.run({.M = GT, .N = HD, .K = T,
            .a = datt, .lda = T, .stride_a = ss,
            .b = kh_.get(), .ldb = HD, .stride_b = skv,
            .d = dqh_.get(), .ldd = HD, .stride_d = sq,
            .batch = B * NKV},
           s);
  // dK (T, HD) = dscores^T (T, G*T) Qg (G*T, HD), dscores stored (G*T, T): summed over the group
  gemm.run({.M = T, .N = HD, .K = GT,
            .a = datt, .lda = T, .ta = true, .stride_a = ss,
            .b = qh_.get(), .ldb = HD, .stride_b = sq,
            .d = dkh_.get(), .ldd = HD, .stride_d = skv,
            .batch = B * NKV},
           s);
  tokens_from_heads(dq, NH * HD, dqh_.get(), B, T, NH, HD, s);
  tokens_from_heads(dk, NKV * HD, dkh_.get(), B, T, NKV, HD, s);
  tokens_from_heads(dv, NKV * HD, dvh_.get(), B, T, NKV, HD, s);
}

// ---------------------------------------------------------------- FlashAttention

namespace {
// `requested` when >= 0, else the environment variable `env` (one digit), else `fallback`.
int flash_variant(int requested, const char* env_name, int count, int fallback, const char* what) {
  if (requested >= 0) {
    if (requested >= count)
      throw std::invalid_argument(fmt::format("flash attention: {} variant {} (0..{})", what, requested, count - 1));
    return requested;
  }
  const char* env = std::getenv(env_name);
  if (!env || !*env) return fallback;
  const std::string s = env;
  if (s.size() != 1 || s[0] < '0' || s[0] - '0' >= count)
    throw std::invalid_argument(fmt::format("{}={}: expected a {} variant 0..{}", env_name, s, what, count - 1));
  return s[0] - '0';
}
}  // namespace

FlashAttention::FlashAttention(int B, int T, int NH, int NKV, int HD, int slots, int bwd_variant, int fwd_variant)
    : shape_(FlashShape::token_major(B, T, NH, NKV, HD)),
      bwd_variant_(flash_variant(bwd_variant, "GPUACCEPT_FLASH_BWD", kFlashBackwardVariants,
                                 flash_backward_default_variant(), "backward")),
      fwd_variant_(flash_variant(fwd_variant, "GPUACCEPT_FLASH_FWD", kFlashForwardVariants,
                                 flash_forward_default_variant(), "forward")) {
  if (B < 1 || slots < 1 || !flash_attention_supported(T, NH, NKV, HD))
    throw std::invalid_argument(fmt::format("flash attention: B={} T={} NH={} NKV={} HD={} slots={}: needs B >= 1, "
                                            "slots >= 1, HD 64 or 128, T a positive multiple of {}, NH a multiple "
                                            "of NKV",
                                            B, T, NH, NKV, HD, slots, kFlashBlock));
  if (!flash_backward_variant_available(bwd_variant_) || !flash_forward_variant_available(fwd_variant_))
    throw std::invalid_argument(fmt::format("flash attention: backward variant {}, forward variant {}: the wgmma "
                                            "variants (backward 3, forward 2) need an sm_90a build and a compute "
                                            "capability 9.0 GPU (H100, H200); backward 0..2 and forward 0..1 run "
                                            "elsewhere",
                                            bwd_variant_, fwd_variant_));
  inputs_.resize(sz(slots));
  lse_ = DeviceBuffer<float>(sz(1LL * slots * B * NH * T));  // (slots, B, NH, T)
  delta_ = DeviceBuffer<float>(sz(1LL * B * NH * T));
  if (flash_backward_stores_ds(bwd_variant_)) ds_ws_ = DeviceBuffer<bf16>(flash_backward_ds_workspace_elems(B, T, NH));
}

std::string FlashAttention::describe() const {
  const auto kernels = [](int variant, bool wgmma) {
    return fmt::format("variant {}, {}", variant, wgmma ? "wgmma" : "mma.sync");
  };
  return fmt::format("flash (forward {}; backward {})", kernels(fwd_variant_, fwd_variant_ == 2),
                     kernels(bwd_variant_, bwd_variant_ == 3));
}

std::size_t FlashAttention::device_bytes() const {
  return lse_.bytes() + delta_.bytes() + ds_ws_.bytes();
}

float* FlashAttention::lse(int slot) const {
  return lse_.get() + sz(slot) * sz(1LL * shape_.B * shape_.NH * shape_.T);
}

void FlashAttention::forward(int slot, bf16* y, const bf16* q, const bf16* k, const bf16* v, Gemm&, cudaStream_t s) {
  inputs_[checked_slot(slot, inputs_.size())] = {q, k, v, y};
  flash_attention_forward(y, lse(slot), q, k, v, shape_, s, fwd_variant_);
}

void FlashAttention::backward(int slot, bf16* dq, bf16* dk, bf16* dv, const bf16* dy, Gemm&, cudaStream_t s) {
  const Inputs in = inputs_[checked_slot(slot, inputs_.size())];
  if (!in.y) throw std::logic_error("flash attention: backward() before forward() of its slot");
  flash_attention_backward(dq, dk, dv, delta_.get(), dy, in.y, lse(slot), in.q, in.k, in.v, shape_, s, bwd_variant_,
                           ds_ws_.get());
}

// ---------------------------------------------------------------- the choice

std::unique_ptr<Attention> make_attention(int B, int T, int NH, int NKV, int HD, int slots) {
  const char* env = std::getenv("GPUACCEPT_FSDP_ATTENTION");
  const std::string choice = env && *env ? env : "auto";
  if (choice == "gemm") return std::make_unique<GemmAttention>(B, T, NH, NKV, HD, slots);
  if (choice == "flash") return std::make_unique<FlashAttention>(B, T, NH, NKV, HD, slots);
  if (choice != "auto")
    throw std::invalid_argument("GPUACCEPT_FSDP_ATTENTION=" + choice + ": expected gemm, flash or auto");
  if (flash_attention_supported(T, NH, NKV, HD)) return std::make_unique<FlashAttention>(B, T, NH, NKV, HD, slots);
  return std::make_unique<GemmAttention>(B, T, NH, NKV, HD, slots);
}

}  // namespace gpuaccept::fsdp::gpu
