// The optimizer step of both training phases (ddp: every GPT-2 weight, fsdp-lora: the flat
// LoRA buffer), after the gradient all-reduce and all on the device: the global gradient
// norm, its clipping factor and AdamW (train/optimizer_kernels.h), with the state they need.
// The clip factor never visits the host; only the norm is copied back, for the step's record.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "cuda/cuda_handles.h"
#include "train/optimizer_kernels.h"

namespace gpuaccept::train {

class ClippedAdamW {
 public:
  explicit ClippedAdamW(std::size_t n);  // n parameters: AdamW's moments m, v (fp32)

  // Zero moments: every training run starts with fresh AdamW state.
  void reset(cudaStream_t stream);
  // The global norm of grad[0..n) and the clipping factor for max_norm (<= 0: none).
  void clip(const float* grad, std::size_t n, float max_norm, cudaStream_t stream);
  // The same in two halves, for a gradient sharded over ranks (each holds its part reduced):
  // this rank's sum of squares into sumsq(), which the caller sums over the ranks in place
  // (an all-reduce of one float), then the norm and the factor from that sum.
  void sum_squares(const float* grad, std::size_t n, cudaStream_t stream);
  void clip_from_sum(float max_norm, cudaStream_t stream);
  float* sumsq() const { return sumsq_.get(); }
  // Moments for n parameters from now on (a run that steps a slice of them), zeroed; m() and
  // v() change. Nothing happens when n is the size already.
  void resize(std::size_t n, cudaStream_t stream);
  // AdamW on the parameters [offset, offset + n), their gradients scaled by clip()'s factor.
  // master, params and grad point at the first of them; the moments are this object's at offset.
  void update(float* master, bf16* params, const float* grad, std::size_t offset, std::size_t n, const AdamW& h,
              cudaStream_t stream);
  // The same over all of them, [0, size()), in one launch: h.weight_decay where `spans` decay.
  void update_all(float* master, bf16* params, const float* grad, const AdamW& h, const DecaySpans& spans,
                  cudaStream_t stream);
  // Enqueue the norm's copy to the host; host_norm() reads it once the stream got there.
  void fetch_norm(cudaStream_t stream);
  float host_norm() const { return host_norm_.get()[0]; }

  // AdamW's moments (n each, fp32 on the device): part of a training checkpoint's state.
  float* m() const { return m_.get(); }
  float* v() const { return v_.get(); }
  std::size_t size() const { return m_.size(); }

  // The learning rate at step t (from 1) after a linear warm-up over `warmup` steps (0: none).
  static double warmed_up(double lr, int t, int warmup);

 private:
  DeviceBuffer<float> m_, v_;  // (n) AdamW moments
  DeviceBuffer<float> sumsq_, partials_, scale_, norm_;  // (1), (kNormPartials), (1), (1)
  PinnedBuffer<float> host_norm_;                        // (1)
};

}  // namespace gpuaccept::train
