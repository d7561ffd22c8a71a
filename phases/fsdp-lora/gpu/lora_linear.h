// A frozen projection with its LoRA adapter, forward and backward (the math of
// ../cpu_reference.h; the adapters' flat buffers: ../lora_layout.h):
//   y  = x W^T (+ b) + s * (dropout(x) A^T) B^T,      s = alpha / r,  A (r, in), B (out, r)
//   dB += s * dy^T (dropout(x) A^T),  dz = s * dy B,  dA += dz^T dropout(x),
//   dx  = dy W + mask * (dz A)                        (W and b are frozen: no gradient)
// The scale s is folded into the kept rank-r product: z = s * dropout(x) A^T (N, r), so
// y += z B^T and dB += dy^T z need no scale of their own; dz gets its s the same way.
// The dropout mask is never stored: it is redrawn from the adapter's DropoutKey (kernels.h)
// wherever it is needed (forward, recompute, backward). Projections that read the same input
// (q, k, v; gate, up) run as one group, so that their adapters' masks are drawn in one pass
// over x and their shares of dx added in one pass over it.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "cuda/cuda_handles.h"
#include "fsdp-lora/cpu_reference.h"
#include "fsdp-lora/gpu/gemm.h"
#include "fsdp-lora/gpu/kernels.h"
#include "fsdp-lora/lora_layout.h"
#include "fsdp-lora/qwen_config.h"

namespace gpuaccept::fsdp::gpu {

// A frozen projection of one layer (device pointers into the gathered layer).
struct FrozenLinear {
  const bf16* w;     // (out, in)
  const bf16* bias;  // (out) or nullptr
  int in, out;
};

// One adapter of the layer computing: device pointers into the flat LoRA buffers.
struct Adapter {
  const bf16* A;  // (r, in) bf16 copy
  const bf16* B;  // (out, r) bf16 copy
  float* dA;      // (r, in) fp32 gradient, accumulated
  float* dB;      // (out, r) fp32 gradient, accumulated
  bf16* z;        // (N, r): s * dropout(x) A^T, written by forward, read by backward
  DropoutKey key;
  double dropout;  // p of this pass (0: none, e.g. evaluation)
};

// Where a projection's input gradient goes: bf16 or fp32, overwritten or accumulated.
struct InputGrad {
  void* data;  // (N, in)
  bool fp32;
  bool accumulate;
};

// One projection of a group reading the same input x.
struct GroupMember {
  FrozenLinear p;
  const Adapter* ad;  // nullptr: no adapter
  bf16* y;            // forward: its output (N, out) (ignored with adapter_only)
  const bf16* dy;     // backward: its output's gradient (N, out)
};

class LoraLinear {
 public:
  // N rows per call; scratch_columns: lora_dropout_scratch_columns (one (N, in) dropout copy
  // per adapter of the widest group), and kMaxSharedDropouts rank-r gradients.
  LoraLinear(Gemm& gemm, int N, int rank, double scale, int scratch_columns);

  // y (N, out) = x W^T (+ bias) (+ residual, which may be y itself) (+ the adapter's branch).
  // adapter_only: only the adapter's z is computed (the recompute of a projection whose output
  // backward does not need), y and residual are ignored.
  void forward(bf16* y, const bf16* x, const FrozenLinear& p, const Adapter* ad, cudaStream_t stream,
               const bf16* residual = nullptr, bool adapter_only = false);
  // From dy (N, out) and the forward's input x (N, in): dx as InputGrad says, and the
  // adapter's dA, dB (accumulated). dx must not overlap x, dy or the scratch.
  void backward(const InputGrad& dx, const bf16* dy, const bf16* x, const FrozenLinear& p, const Adapter* ad,
                cudaStream_t stream);

  // The same for up to kMaxSharedDropouts projections reading x, in order: for each member what
  // forward (y = member.y) and backward (dy = member.dy) above do, and the same bits, but for
  // the order of dx's fp32 sums in backward: every member's base part first (the first as dx
  // says, the rest accumulated), then every adapter's share, in member order.
  void forward_group(std::span<const GroupMember> group, const bf16* x, cudaStream_t stream, bool adapter_only = false);
  void backward_group(const InputGrad& dx, std::span<const GroupMember> group, const bf16* x, cudaStream_t stream);

  std::size_t device_bytes() const { return dropped_.bytes() + dz_.bytes(); }

 private:
  // dropout(x) for each member's adapter, all in one pass: xd[i] is x itself where the member
  // has no adapter or p == 0, else its slot of dropped_.
  void draw_dropouts(std::span<const GroupMember> group, const bf16* x, const bf16** xd, cudaStream_t stream);
  bf16* dropped_slot(int i, int in) const { return dropped_.get() + static_cast<std::size_t>(i) * N_ * in; }
  bf16* dz_slot(int i) const { return dz_.get() + static_cast<std::size_t>(i) * N_ * rank_; }

  Gemm& gemm_;
  int N_, rank_;
  float scale_;
  std::size_t scratch_columns_;
  DeviceBuffer<bf16> dropped_;  // (N, scratch_columns): each adapter's dropout(x), then in
                                // backward its (dz A) before its mask
  DeviceBuffer<bf16> dz_;       // (kMaxSharedDropouts, N, r)
};

}  // namespace gpuaccept::fsdp::gpu
