#include "fsdp-lora/gpu/lora_linear.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "fsdp-lora/shard_plan.h"

namespace gpuaccept::fsdp::gpu {

// ---------------------------------------------------------------- a projection with its adapter

LoraLinear::LoraLinear(Gemm& gemm, int N, int rank, double scale, int scratch_columns)
    : gemm_(gemm),
      N_(N),
      rank_(rank),
      scale_(static_cast<float>(scale)),
      scratch_columns_(static_cast<std::size_t>(scratch_columns)),
      dropped_(static_cast<std::size_t>(N) * scratch_columns_),
      dz_(static_cast<std::size_t>(kMaxSharedDropouts) * static_cast<std::size_t>(N) * static_cast<std::size_t>(rank)) {}

void LoraLinear::draw_dropouts(std::span<const GroupMember> group, const bf16* x, const bf16** xd,
                               cudaStream_t stream) {
  if (group.empty() || static_cast<int>(group.size()) > kMaxSharedDropouts)
    throw std::invalid_argument(fmt::format("LoraLinear: a group has 1 to {} projections, not {}", kMaxSharedDropouts,
                                            group.size()));
  const int in = group[0].p.in;
  bf16* out[kMaxSharedDropouts];
  DropoutKey keys[kMaxSharedDropouts];
  int count = 0;
  double p = 0;
  for (std::size_t i = 0; i < group.size(); ++i) {
    const GroupMember& m = group[i];
    if (m.p.in != in) throw std::invalid_argument("LoraLinear: a group's projections must read the same input");
    xd[i] = x;
    if (!m.ad || m.ad->dropout == 0) continue;
    if (count > 0 && m.ad->dropout != p)
      throw std::invalid_argument("LoraLinear: a group's adapters must share one dropout probability");
    if (static_cast<std::size_t>(count + 1) * static_cast<std::size_t>(in) > scratch_columns_)
      throw std::invalid_argument(fmt::format("LoraLinear: {} dropout copies of {} columns exceed the scratch's {}",
                                              count + 1, in, scratch_columns_));
    p = m.ad->dropout;
    out[count] = dropped_slot(count, in);
    keys[count] = m.ad->key;
    xd[i] = out[count];
    ++count;
  }
  if (count > 0) lora_dropout_forward_shared(out, keys, count, in, x, in, N_, in, p, stream);
}

void LoraLinear::forward(bf16* y, const bf16* x, const FrozenLinear& p, const Adapter* ad, cudaStream_t stream,
                         const bf16* residual, bool adapter_only) {
  const int N = N_, r = rank_;
  if (!adapter_only) gemm_.linear(y, x, p.w, p.bias, N, p.in, p.out, stream, residual);  // y (N, out) = x W^T + b (+ res)
  if (!ad) return;
  const GroupMember self{p, ad, y, nullptr};
  const bf16* xd = nullptr;
  draw_dropouts({&self, 1}, x, &xd, stream);
  gemm_.linear(ad->z, xd, ad->A, nullptr, N, p.in, r, stream);                      // z (N, r) = xd A^T
  scale_bf16(ad->z, static_cast<std::size_t>(N) * r, scale_, stream);               // z = s * xd A^T
  if (!adapter_only) gemm_.linear(y, ad->z, ad->B, nullptr, N, r, p.out, stream, y);  // y (N, out) += z B^T
}

void LoraLinear::forward_group(std::span<const GroupMember> group, const bf16* x, cudaStream_t stream,
                               bool adapter_only) {
  const int N = N_, r = rank_;
  const bf16* xd[kMaxSharedDropouts];
  draw_dropouts(group, x, xd, stream);
  for (std::size_t i = 0; i < group.size(); ++i) {
    const GroupMember& m = group[i];
    if (!adapter_only) gemm_.linear(m.y, x, m.p.w, m.p.bias, N, m.p.in, m.p.out, stream);  // y = x W^T + b
    if (!m.ad) continue;
    gemm_.linear(m.ad->z, xd[i], m.ad->A, nullptr, N, m.p.in, r, stream);                 // z = xd A^T
    scale_bf16(m.ad->z, static_cast<std::size_t>(N) * r, scale_, stream);                 // z = s * xd A^T
    if (!adapter_only) gemm_.linear(m.y, m.ad->z, m.ad->B, nullptr, N, r, m.p.out, stream, m.y);  // y += z B^T
  }
}

void LoraLinear::backward(const InputGrad& dx, const bf16* dy, const bf16* x, const FrozenLinear& p, const Adapter* ad,
                          cudaStream_t stream) {
  const GroupMember self{p, ad, nullptr, dy};
  backward_group(dx, {&self, 1}, x, stream);
}

void LoraLinear::backward_group(const InputGrad& dx, std::span<const GroupMember> group, const bf16* x,
                                cudaStream_t stream) {
  const int N = N_, r = rank_;
  // The adapters' own gradients, from dropout(x) drawn again (every adapter's in one pass).
  const bf16* xd[kMaxSharedDropouts];
  draw_dropouts(group, x, xd, stream);
  for (std::size_t i = 0; i < group.size(); ++i) {
    const GroupMember& m = group[i];
    if (!m.ad) continue;
    bf16* dz = dz_slot(static_cast<int>(i));
    gemm_.linear_dweight(m.ad->dB, m.dy, m.ad->z, N, r, m.p.out, stream);          // dB (out, r) += dy^T z
    gemm_.linear_dinput(dz, false, false, m.dy, m.ad->B, N, r, m.p.out, stream);   // dz (N, r) = dy B
    scale_bf16(dz, static_cast<std::size_t>(N) * r, scale_, stream);               // dz = s * dy B
    gemm_.linear_dweight(m.ad->dA, dz, xd[i], N, m.p.in, r, stream);               // dA (r, in) += dz^T xd
  }
  // The base's part of dx: dx (N, in) (+)= dy W, the first member as dx says, the rest added.
  for (std::size_t i = 0; i < group.size(); ++i) {
    const GroupMember& m = group[i];
    gemm_.linear_dinput(dx.data, dx.fp32, i == 0 ? dx.accumulate : true, m.dy, m.p.w, N, m.p.in, m.p.out, stream);
  }
  // The adapters' shares, dx += mask * (dz A): without dropout straight into dx; with it, each
  // product into its scratch slot (its dropout(x) is no longer needed), then the masks of the
  // same keys, all added in one pass where dx is fp32.
  const int in = group[0].p.in;
  const bf16* shares[kMaxSharedDropouts];
  DropoutKey keys[kMaxSharedDropouts];
  int count = 0;
  double p = 0;
  for (std::size_t i = 0; i < group.size(); ++i) {
    const GroupMember& m = group[i];
    if (!m.ad) continue;
    bf16* dz = dz_slot(static_cast<int>(i));
    if (m.ad->dropout == 0) {
      gemm_.linear_dinput(dx.data, dx.fp32, true, dz, m.ad->A, N, in, r, stream);  // dx += dz A
      continue;
    }
    bf16* share = dropped_slot(count, in);
    gemm_.linear_dinput(share, false, false, dz, m.ad->A, N, in, r, stream);       // (N, in) = dz A
    if (!dx.fp32) {
      lora_dropout_backward(static_cast<bf16*>(dx.data), in, share, in, N, in, m.ad->dropout, m.ad->key, true, stream);
      continue;
    }
    shares[count] = share;
    keys[count] = m.ad->key;
    p = m.ad->dropout;
    ++count;
  }
  if (count > 0)
    lora_dropout_backward_fp32_shared(static_cast<float*>(dx.data), in, shares, keys, count, in, N, in, p, stream);
}

}  // namespace gpuaccept::fsdp::gpu
