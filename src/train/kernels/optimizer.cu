// What runs after the gradient all-reduce: the global norm, the clipping factor, AdamW.
// All of it must give the same bits on every replica, so no atomics and no launch shape
// that depends on the device: the norm's reduction order is fixed by the constants below.
// Both training phases step with these (train/optimizer_kernels.h); the launch shapes are
// the ones ddp measured with.
#include "train/kernels/common.cuh"

namespace gpuaccept::train {

using namespace detail;

namespace {

constexpr int kNormBlock = 512;   // threads of each partial-sum block (fixed: it sets the order)
constexpr int kFinalBlock = 1024; // the one block that adds the kNormPartials partials
constexpr int kAdamBlock = 256;

// partials[block] = sum of g[i]^2 over the thread's i, each thread in its grid-stride order.
// kVector: four values a thread a pass through 16-byte loads (g aligned), the rest one at a
// time: the grid is fixed, so the order is still the same on every GPU. One value a thread
// a pass read the 0.5 GB of GPT-2 124M's gradient at 2.4 TB/s on an H200 (0.21 ms, 2026-11-28).
template <bool kVector>
__global__ void sum_of_squares_partials_kernel(float* __restrict__ partials, const float* __restrict__ g,
                                               std::size_t n) {
  float acc = 0.f;
  std::size_t n4 = 0;  // values [0, 4 n4) four at a time
  if constexpr (kVector) n4 = n / 4;
#pragma unroll 4
  for (std::size_t j = global_thread(); j < n4; j += global_threads()) {
    const float4 v = reinterpret_cast<const float4*>(g)[j];
    acc += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
  }
  for (std::size_t i = 4 * n4 + global_thread(); i < n; i += global_threads()) acc += g[i] * g[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// *out = sum of the partials, in block_sum's fixed tree order.
__global__ void sum_of_squares_final_kernel(float* __restrict__ out, const float* __restrict__ partials) {
  float acc = 0.f;
  for (int i = threadIdx.x; i < kNormPartials; i += blockDim.x) acc += partials[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) *out = acc;
}

// norm = sqrt(sumsq); scale = max_norm / norm when the norm exceeds max_norm > 0, else 1.
// Correctly rounded sqrt and division (not --use_fast_math's approximations): one thread.
__global__ void clip_scale_kernel(float* scale, float* norm, const float* sumsq, float max_norm) {
  const float nrm = __fsqrt_rn(*sumsq);
  *norm = nrm;
  *scale = max_norm > 0.f && nrm > max_norm ? __fdiv_rn(max_norm, nrm) : 1.f;
}

// AdamW as in optimizer_kernels.h; bias_correction1/2 = 1 - beta^t, computed on the host.
struct AdamWArgs {
  float scale, lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2;
};

// One parameter's step: its moments m, v updated in place, its new master weight returned.
__device__ inline float adamw_step(float w, float g, float& m, float& v, const AdamWArgs& a, float weight_decay) {
  g *= a.scale;
  m = a.beta1 * m + (1.f - a.beta1) * g;
  v = a.beta2 * v + (1.f - a.beta2) * g * g;
  const float mhat = m / a.bias_correction1, vhat = v / a.bias_correction2;
  return w - a.lr * (mhat / (sqrtf(vhat) + a.eps) + weight_decay * w);
}

// Parameter i's weight decay: weight_decay in a decaying span, else 0. `span` is where the
// walk starts and is left at i's span: a thread's parameters only grow, so over a whole
// grid-stride loop it walks the spans once.
__device__ inline float decay_of(std::size_t i, const DecaySpans& spans, float weight_decay, int& span) {
  while (span < spans.count - 1 && i >= spans.end[span]) ++span;
  return spans.decays[span] ? weight_decay : 0.f;
}

// kVector: four parameters a thread a pass, through 16-byte loads and stores (8 for the bf16
// weights), where every array is aligned for it (adamw_update checks); the step is bound by
// its 30 bytes a parameter, and the scalar loop reached 73% of an H200's bandwidth (1.06 ms for
// GPT-2 124M, 2026-11-28). The arithmetic per parameter is the same either way.
template <bool kVector>
__global__ void adamw_kernel(float* __restrict__ master, bf16* __restrict__ params, float* __restrict__ m,
                             float* __restrict__ v, const float* __restrict__ grad,
                             const float* __restrict__ grad_scale, std::size_t n, AdamWArgs a, DecaySpans spans) {
  a.scale = *grad_scale;
  int span = 0;        // decay_of's walk
  std::size_t n4 = 0;  // parameters [0, 4 n4) four at a time
  if constexpr (kVector) n4 = n / 4;
  for (std::size_t j = global_thread(); j < n4; j += global_threads()) {
    const float4 w = reinterpret_cast<const float4*>(master)[j], g = reinterpret_cast<const float4*>(grad)[j];
    float4 mi = reinterpret_cast<const float4*>(m)[j], vi = reinterpret_cast<const float4*>(v)[j];
    // A span may end inside the four: each parameter its own decay.
    const float4 out = {adamw_step(w.x, g.x, mi.x, vi.x, a, decay_of(4 * j, spans, a.weight_decay, span)),
                        adamw_step(w.y, g.y, mi.y, vi.y, a, decay_of(4 * j + 1, spans, a.weight_decay, span)),
                        adamw_step(w.z, g.z, mi.z, vi.z, a, decay_of(4 * j + 2, spans, a.weight_decay, span)),
                        adamw_step(w.w, g.w, mi.w, vi.w, a, decay_of(4 * j + 3, spans, a.weight_decay, span))};
    reinterpret_cast<float4*>(m)[j] = mi;
    reinterpret_cast<float4*>(v)[j] = vi;
    reinterpret_cast<float4*>(master)[j] = out;
    const __nv_bfloat162 lo = __floats2bfloat162_rn(out.x, out.y), hi = __floats2bfloat162_rn(out.z, out.w);
    reinterpret_cast<uint2*>(params)[j] =
        make_uint2(*reinterpret_cast<const unsigned*>(&lo), *reinterpret_cast<const unsigned*>(&hi));
  }
  for (std::size_t i = n4 * 4 + global_thread(); i < n; i += global_threads()) {  // the rest, one at a time
    float mi = m[i], vi = v[i];
    const float w = adamw_step(master[i], grad[i], mi, vi, a, decay_of(i, spans, a.weight_decay, span));
    m[i] = mi;
    v[i] = vi;
    master[i] = w;
    params[i] = __float2bfloat16(w);
  }
}

}  // namespace

void sum_of_squares(float* out, float* partials, const float* g, std::size_t n, cudaStream_t stream) {
  // Fixed grid even for n == 0 (the partials are then 0): the order must not depend on n.
  if (aligned16(g))
    sum_of_squares_partials_kernel<true><<<kNormPartials, kNormBlock, 0, stream>>>(partials, g, n);
  else
    sum_of_squares_partials_kernel<false><<<kNormPartials, kNormBlock, 0, stream>>>(partials, g, n);
  check_launch("sum_of_squares (partials)");
  sum_of_squares_final_kernel<<<1, kFinalBlock, 0, stream>>>(out, partials);
  check_launch("sum_of_squares (final)");
}

void clip_scale(float* scale, float* norm, const float* sumsq, float max_norm, cudaStream_t stream) {
  clip_scale_kernel<<<1, 1, 0, stream>>>(scale, norm, sumsq, max_norm);
  check_launch("clip_scale");
}

void DecaySpans::add(std::size_t span_end, bool decay) {
  require(count == 0 || span_end >= end[count - 1], "DecaySpans: spans out of order");
  if (count > 0 && decays[count - 1] == decay) {
    end[count - 1] = span_end;
    return;
  }
  require(count < kMaxDecaySpans, "DecaySpans: more spans than kMaxDecaySpans");
  end[count] = span_end;
  decays[count] = decay;
  ++count;
}

void adamw_update(float* master, bf16* params, float* m, float* v, const float* grad, const float* grad_scale,
                  std::size_t n, AdamW h, const DecaySpans& spans, cudaStream_t stream) {
  require(h.t >= 1, "adamw_update: the step t counts from 1");
  require(spans.count >= 1 && spans.end[spans.count - 1] == n, "adamw_update: the decay spans must end at n");
  if (n == 0) return;
  const float bias_correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta1), h.t));
  const float bias_correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta2), h.t));
  const AdamWArgs args{1.f, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, bias_correction1, bias_correction2};
  const bool params8 = reinterpret_cast<std::uintptr_t>(params) % 8 == 0;  // four bf16 a store
  if (aligned16(master) && aligned16(m) && aligned16(v) && aligned16(grad) && params8)
    adamw_kernel<true><<<grid_for((n + 3) / 4, kAdamBlock), kAdamBlock, 0, stream>>>(master, params, m, v, grad,
                                                                                     grad_scale, n, args, spans);
  else
    adamw_kernel<false><<<grid_for(n, kAdamBlock), kAdamBlock, 0, stream>>>(master, params, m, v, grad, grad_scale, n,
                                                                            args, spans);
  check_launch("adamw_update");
}

void adamw_update(float* master, bf16* params, float* m, float* v, const float* grad, const float* grad_scale,
                  std::size_t n, AdamW h, cudaStream_t stream) {
  DecaySpans all;
  all.add(n, true);
  adamw_update(master, params, m, v, grad, grad_scale, n, h, all, stream);
}

}  // namespace gpuaccept::train
