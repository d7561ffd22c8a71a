// LoRA's trainable numbers in one flat buffer, and a frozen projection with its adapter,
// forward and backward (the math of ../cpu_reference.h):
//   y  = x W^T (+ b) + s * (dropout(x) A^T) B^T,      s = alpha / r,  A (r, in), B (out, r)
//   dB += s * dy^T (dropout(x) A^T),  dz = s * dy B,  dA += dz^T dropout(x),
//   dx  = dy W + mask * (dz A)                        (W and b are frozen: no gradient)
// The scale s is folded into the kept rank-r product: z = s * dropout(x) A^T (N, r), so
// y += z B^T and dB += dy^T z need no scale of their own; dz gets its s the same way.
// The dropout mask is never stored: it is redrawn from the adapter's DropoutKey (kernels.h)
// wherever it is needed (forward, recompute, backward).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "cuda/cuda_handles.h"
#include "fsdp-lora/cpu_reference.h"
#include "fsdp-lora/gpu/gemm.h"
#include "fsdp-lora/gpu/kernels.h"
#include "fsdp-lora/qwen_config.h"

namespace gpuaccept::fsdp::gpu {

// Where adapter (layer, target) lives in the flat LoRA buffers: A (r, in) at a_offset, then
// B (out, r) at b_offset, adapter after adapter, layer after layer, in LoraConfig::targets'
// order. Every tensor starts at a multiple of kTensorAlignElems (64) elements, so that the
// bf16 copy (128 bytes) and the fp32 master and gradients (256 bytes) hand the matmuls aligned
// operands; the padding between tensors is zero and stays zero (its gradient is 0).
// The fp32 master, the bf16 copy and the fp32 gradients share this one layout, so the
// all-reduce of the gradients and AdamW see one contiguous buffer of total() values.
struct LoraSlot {
  int layer;
  Projection target;
  int target_index;  // j in LoraConfig::targets (LoraWeights::layers[layer][j])
  int in, out;
  std::size_t a_offset, b_offset;  // elements from the buffer's start
};

class LoraLayout {
 public:
  LoraLayout(const QwenConfig& config, const LoraConfig& lora);
  std::size_t total() const { return total_; }            // elements, padding included
  std::size_t parameters() const { return parameters_; }  // trainable numbers (lora_parameter_count)
  int rank() const { return rank_; }
  const std::vector<LoraSlot>& slots() const { return slots_; }
  // The slot of (layer, target), nullptr when target has no adapter.
  const LoraSlot* find(int layer, Projection target) const;
  // Where each layer's adapters begin: layers + 1 offsets, the last total(); layer l's
  // adapters and padding are [starts[l], starts[l + 1]) (the gradient buckets' unit).
  std::vector<std::size_t> layer_starts() const;

  // The CPU reference's adapters (or gradients) to the flat layout as fp32 (padding 0), and
  // back. Throw std::invalid_argument when the shapes do not match.
  std::vector<float> flatten(const LoraWeights& adapters) const;
  LoraWeights unflatten(std::span<const float> flat) const;

 private:
  int layers_, rank_;
  std::vector<Projection> targets_;
  std::vector<LoraSlot> slots_;  // layer-major: slots_[layer * targets + j]
  std::size_t total_ = 0, parameters_ = 0;
};

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

class LoraLinear {
 public:
  // N rows per call; scratch for the widest adapter input (max_in) and the rank-r gradient.
  LoraLinear(Gemm& gemm, int N, int rank, double scale, int max_in);

  // y (N, out) = x W^T (+ bias) (+ residual, which may be y itself) (+ the adapter's branch).
  // adapter_only: only the adapter's z is computed (the recompute of a projection whose output
  // backward does not need), y and residual are ignored.
  void forward(bf16* y, const bf16* x, const FrozenLinear& p, const Adapter* ad, cudaStream_t stream,
               const bf16* residual = nullptr, bool adapter_only = false);
  // From dy (N, out) and the forward's input x (N, in): dx as InputGrad says, and the
  // adapter's dA, dB (accumulated). dx must not overlap x, dy or the scratch.
  void backward(const InputGrad& dx, const bf16* dy, const bf16* x, const FrozenLinear& p, const Adapter* ad,
                cudaStream_t stream);

  std::size_t device_bytes() const { return dropped_.bytes() + dz_.bytes(); }

 private:
  // dropout(x) for the adapter: x itself when p == 0, else drawn into dropped_.
  const bf16* dropped_input(const bf16* x, int in, const Adapter& ad, cudaStream_t stream);

  Gemm& gemm_;
  int N_, rank_;
  float scale_;
  DeviceBuffer<bf16> dropped_;  // (N, max_in): dropout(x), then in backward (dz A) before its mask
  DeviceBuffer<bf16> dz_;       // (N, r)
};

}  // namespace gpuaccept::fsdp::gpu
