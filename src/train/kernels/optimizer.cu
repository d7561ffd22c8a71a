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

// partials[block] = sum of g[i]^2 over i = block*kNormBlock + tid + k*kNormPartials*kNormBlock.
__global__ void sum_of_squares_partials_kernel(float* __restrict__ partials, const float* __restrict__ g,
                                               std::size_t n) {
  float acc = 0.f;
  for (std::size_t i = global_thread(); i < n; i += global_threads()) acc += g[i] * g[i];
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
__global__ void adamw_kernel(float* __restrict__ master, bf16* __restrict__ params, float* __restrict__ m,
                             float* __restrict__ v, const float* __restrict__ grad,
                             const float* __restrict__ grad_scale, std::size_t n, float lr, float beta1, float beta2,
                             float eps, float weight_decay, float bias_correction1, float bias_correction2) {
  const float scale = *grad_scale;
  for (std::size_t i = global_thread(); i < n; i += global_threads()) {
    const float g = grad[i] * scale;
    const float mi = beta1 * m[i] + (1.f - beta1) * g;
    const float vi = beta2 * v[i] + (1.f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float mhat = mi / bias_correction1, vhat = vi / bias_correction2;
    float w = master[i];
    w -= lr * (mhat / (sqrtf(vhat) + eps) + weight_decay * w);
    master[i] = w;
    params[i] = __float2bfloat16(w);
  }
}

}  // namespace

void sum_of_squares(float* out, float* partials, const float* g, std::size_t n, cudaStream_t stream) {
  // Fixed grid even for n == 0 (the partials are then 0): the order must not depend on n.
  sum_of_squares_partials_kernel<<<kNormPartials, kNormBlock, 0, stream>>>(partials, g, n);
  check_launch("sum_of_squares (partials)");
  sum_of_squares_final_kernel<<<1, kFinalBlock, 0, stream>>>(out, partials);
  check_launch("sum_of_squares (final)");
}

void clip_scale(float* scale, float* norm, const float* sumsq, float max_norm, cudaStream_t stream) {
  clip_scale_kernel<<<1, 1, 0, stream>>>(scale, norm, sumsq, max_norm);
  check_launch("clip_scale");
}

void adamw_update(float* master, bf16* params, float* m, float* v, const float* grad, const float* grad_scale,
                  std::size_t n, AdamW h, cudaStream_t stream) {
  require(h.t >= 1, "adamw_update: the step t counts from 1");
  if (n == 0) return;
  const float bias_correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta1), h.t));
  const float bias_correction2 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta2), h.t));
  adamw_kernel<<<grid_for(n, kAdamBlock), kAdamBlock, 0, stream>>>(master, params, m, v, grad, grad_scale, n, h.lr,
                                                                   h.beta1, h.beta2, h.eps, h.weight_decay,
                                                                   bias_correction1, bias_correction2);
  check_launch("adamw_update");
}

}  // namespace gpuaccept::train
