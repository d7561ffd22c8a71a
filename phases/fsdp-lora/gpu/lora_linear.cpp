#include "fsdp-lora/gpu/lora_linear.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "fsdp-lora/shard_plan.h"

namespace gpuaccept::fsdp::gpu {

// ---------------------------------------------------------------- a projection with its adapter

LoraLinear::LoraLinear(Gemm& gemm, int N, int rank, double scale, int max_in)
    : gemm_(gemm),
      N_(N),
      rank_(rank),
      scale_(static_cast<float>(scale)),
      dropped_(static_cast<std::size_t>(N) * static_cast<std::size_t>(max_in)),
      dz_(static_cast<std::size_t>(N) * static_cast<std::size_t>(rank)) {}

const bf16* LoraLinear::dropped_input(const bf16* x, int in, const Adapter& ad, cudaStream_t stream) {
  if (ad.dropout == 0) return x;
  lora_dropout_forward(dropped_.get(), in, x, in, N_, in, ad.dropout, ad.key, nullptr, stream);
  return dropped_.get();
}

void LoraLinear::forward(bf16* y, const bf16* x, const FrozenLinear& p, const Adapter* ad, cudaStream_t stream,
                         const bf16* residual, bool adapter_only) {
  const int N = N_, r = rank_;
  if (!adapter_only) gemm_.linear(y, x, p.w, p.bias, N, p.in, p.out, stream, residual);  // y (N, out) = x W^T + b (+ res)
  if (!ad) return;
  const bf16* xd = dropped_input(x, p.in, *ad, stream);
  gemm_.linear(ad->z, xd, ad->A, nullptr, N, p.in, r, stream);                      // z (N, r) = xd A^T
  scale_bf16(ad->z, static_cast<std::size_t>(N) * r, scale_, stream);               // z = s * xd A^T
  if (!adapter_only) gemm_.linear(y, ad->z, ad->B, nullptr, N, r, p.out, stream, y);  // y (N, out) += z B^T
}

void LoraLinear::backward(const InputGrad& dx, const bf16* dy, const bf16* x, const FrozenLinear& p, const Adapter* ad,
                          cudaStream_t stream) {
  const int N = N_, r = rank_;
  if (ad) {
    gemm_.linear_dweight(ad->dB, dy, ad->z, N, r, p.out, stream);                  // dB (out, r) += dy^T z
    gemm_.linear_dinput(dz_.get(), false, false, dy, ad->B, N, r, p.out, stream);  // dz (N, r) = dy B
    scale_bf16(dz_.get(), static_cast<std::size_t>(N) * r, scale_, stream);        // dz = s * dy B
    const bf16* xd = dropped_input(x, p.in, *ad, stream);
    gemm_.linear_dweight(ad->dA, dz_.get(), xd, N, p.in, r, stream);               // dA (r, in) += dz^T xd
  }
  gemm_.linear_dinput(dx.data, dx.fp32, dx.accumulate, dy, p.w, N, p.in, p.out, stream);  // dx (N, in) (+)= dy W
  if (!ad) return;
  if (ad->dropout == 0) {
    gemm_.linear_dinput(dx.data, dx.fp32, true, dz_.get(), ad->A, N, p.in, r, stream);  // dx += dz A
    return;
  }
  // dx += mask * (dz A): the product into the scratch (dropout(x) is no longer needed), then
  // the mask of the same key, added into dx.
  gemm_.linear_dinput(dropped_.get(), false, false, dz_.get(), ad->A, N, p.in, r, stream);  // (N, in) = dz A
  if (dx.fp32)
    lora_dropout_backward_fp32(static_cast<float*>(dx.data), p.in, dropped_.get(), p.in, N, p.in, ad->dropout, ad->key,
                               stream);
  else
    lora_dropout_backward(static_cast<bf16*>(dx.data), p.in, dropped_.get(), p.in, N, p.in, ad->dropout, ad->key, true,
                          stream);
}

}  // namespace gpuaccept::fsdp::gpu
