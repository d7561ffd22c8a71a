// Causal grouped-query attention of one layer, behind one small interface so that the
// GEMM-and-softmax version below can be swapped for a fused (flash) one without touching the
// model: token-major q, k, v in (after RoPE), token-major output out. What backward needs is
// kept per slot (`slots` from the constructor): with activation recompute the model runs a
// layer's forward again just before its backward, so one slot serves every layer; without it,
// forward keeps every layer's activations and layer l uses slot l. backward(slot) follows the
// last forward(slot) of that slot. An implementation may keep pointers to a slot's q, k, v and
// y and read them again in backward: the caller leaves those buffers unchanged from forward()
// to backward() (QwenLoraModel does: y feeds o_proj's backward).
//
// Math (../cpu_reference.h): query head h reads key/value head h / G, G = NH / NKV;
//   att[t1, t2] = softmax_{t2 <= t1}(q_t1 . k_t2 / sqrt(HD)),   y_t1 = sum_t2 att[t1, t2] v_t2.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cuda/cuda_handles.h"
#include "train/flash_attention_kernels.h"
#include "fsdp-lora/gpu/gemm.h"

namespace gpuaccept::fsdp::gpu {

class Attention {
 public:
  virtual ~Attention() = default;
  // y (B, T, NH*HD) from q (B, T, NH*HD), k and v (B, T, NKV*HD), all token-major, contiguous.
  virtual void forward(int slot, bf16* y, const bf16* q, const bf16* k, const bf16* v, Gemm& gemm,
                       cudaStream_t stream) = 0;
  // After forward() of the same slot: dq, dk, dv (token-major as q, k, v; overwritten) from
  // dy (token-major as y).
  virtual void backward(int slot, bf16* dq, bf16* dk, bf16* dv, const bf16* dy, Gemm& gemm, cudaStream_t stream) = 0;
  virtual std::size_t device_bytes() const = 0;
  virtual const char* name() const = 0;
  // For the job log: the name and which kernels run (the flash variants differ by GPU).
  virtual std::string describe() const { return name(); }
};

// Attention as batched matmuls around the causal softmax kernels both training phases share
// (train/causal_softmax_kernels.h). The heads are made
// head-major first, q as (B, NKV, G, T, HD): the G query heads of one key/value head are
// adjacent, so they form one (G*T, HD) matrix, and (since h = kv_head * G + g) that is simply
// (B, NH, T, HD). Per (b, kv head), one matmul of M = G*T rows then covers the whole group
// against that kv head's (T, HD) K and V, which are never copied per query head; and in
// backward dK and dV, products over K = G*T, sum the group's contributions themselves.
// Scores are full (T, T) per head (the softmax never reads above the diagonal): correctness
// first, O(T^2) memory: 2 x (B, NH, T, T) bf16. So the softmax is kept for one slot only: a
// backward of another slot first runs that slot's forward again (from its q, k, v; rewriting
// its y with the same bits).
class GemmAttention final : public Attention {
 public:
  GemmAttention(int B, int T, int NH, int NKV, int HD, int slots = 1);
  void forward(int slot, bf16* y, const bf16* q, const bf16* k, const bf16* v, Gemm& gemm,
               cudaStream_t stream) override;
  void backward(int slot, bf16* dq, bf16* dk, bf16* dv, const bf16* dy, Gemm& gemm, cudaStream_t stream) override;
  std::size_t device_bytes() const override;
  const char* name() const override { return "gemm+softmax"; }

 private:
  struct Inputs {
    bf16* y = nullptr;
    const bf16 *q = nullptr, *k = nullptr, *v = nullptr;
  };
  int B_, T_, NH_, NKV_, HD_, G_;
  std::vector<Inputs> inputs_;  // per slot, from its last forward
  int softmax_slot_ = -1;       // the slot att_ (and qh_, kh_, vh_) hold
  DeviceBuffer<bf16> qh_;      // (B, NKV, G, T, HD) = (B, NH, T, HD)  q head-major
  DeviceBuffer<bf16> kh_, vh_; // (B, NKV, T, HD)
  DeviceBuffer<bf16> scores_;  // (B, NH, T, T)  q k^T (unscaled); in backward datt, then dscores
  DeviceBuffer<bf16> att_;     // (B, NH, T, T)  softmax, 0 above the diagonal; kept for backward
  DeviceBuffer<bf16> yh_;      // (B, NH, T, HD) att v; in backward dy head-major
  DeviceBuffer<bf16> dqh_;     // (B, NH, T, HD)
  DeviceBuffer<bf16> dkh_, dvh_;  // (B, NKV, T, HD)
};

// Fused causal attention for HD = 128 (and 64) (FlashAttention-2, src/train's, shared with ddp:
// train/flash_attention_kernels.h): no (T, T) matrix anywhere, key blocks above the diagonal
// skipped, q, k, v read token-major in place. Keeps the forward's logsumexp per query row
// (B, NH, T) fp32 for backward, and pointers to forward's q, k, v and y (see above). The
// backward is deterministic: dk, dv of a kv head are summed over its G query heads inside one
// thread block, dq has its own pass. T % 64 == 0 (fsdp_config.h requires it of seq_len).
// The backward's kernels are kernels.h's variant `bwd_variant` (0..kFlashBackwardVariants-1);
// -1: the environment variable GPUACCEPT_FLASH_BWD, flash_backward_default_variant() where unset.
// Variants 2 and 3 (the defaults) keep a bf16 workspace of dS tiles (kernels.h).
// The forward's kernel is kernels.h's forward variant `fwd_variant`; -1: GPUACCEPT_FLASH_FWD,
// flash_forward_default_variant() where unset.
class FlashAttention final : public Attention {
 public:
  FlashAttention(int B, int T, int NH, int NKV, int HD, int slots = 1, int bwd_variant = -1, int fwd_variant = -1);
  int backward_variant() const { return bwd_variant_; }
  int forward_variant() const { return fwd_variant_; }
  void forward(int slot, bf16* y, const bf16* q, const bf16* k, const bf16* v, Gemm& gemm,
               cudaStream_t stream) override;
  void backward(int slot, bf16* dq, bf16* dk, bf16* dv, const bf16* dy, Gemm& gemm, cudaStream_t stream) override;
  std::size_t device_bytes() const override;
  const char* name() const override { return "flash"; }
  std::string describe() const override;  // "flash (forward variant 2, wgmma; backward variant 3, wgmma)"

 private:
  struct Inputs {
    const bf16 *q = nullptr, *k = nullptr, *v = nullptr, *y = nullptr;  // forward's, the caller's buffers
  };
  float* lse(int slot) const;
  train::FlashShape shape_;  // q, k, v token-major and apart
  int bwd_variant_, fwd_variant_;
  std::vector<Inputs> inputs_;  // per slot
  DeviceBuffer<bf16> ds_ws_;   // variant 2: dS^T tiles of the causal half of (B, NH, T, T)
  DeviceBuffer<float> lse_;    // (slots, B, NH, T)  ln sum_t2 exp(scaled score), from forward
  DeviceBuffer<float> delta_;  // (B, NH, T)  rowsum(dy o y), backward's workspace
};

// FlashAttention where it applies (HD 64 or 128, T % 64 == 0), GemmAttention otherwise, keeping
// `slots` layers' state. The environment variable GPUACCEPT_FSDP_ATTENTION chooses by hand:
// "gemm" (always the reference), "flash" (FlashAttention or an std::invalid_argument), "auto"
// or unset (as above).
std::unique_ptr<Attention> make_attention(int B, int T, int NH, int NKV, int HD, int slots = 1);

}  // namespace gpuaccept::fsdp::gpu
