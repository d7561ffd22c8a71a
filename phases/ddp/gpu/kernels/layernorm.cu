// LayerNorm over the channels of each row, one warp per row (llm.c's layernorm kernels).
// Lane L owns the groups of W channels starting at W*L, W*(L+32), ... (W = 8, 16-byte
// accesses, when C % 8 == 0 and the pointers are aligned; else W = 1). A row (C <= 1600
// bf16) stays in L1 between the passes, so re-reading it is cheap.
#include "common.cuh"

namespace gpuaccept::ddp::gpu {

using namespace detail;

namespace {

constexpr float kEps = 1e-5f;
constexpr int kForwardBlock = 256;       // 8 rows per block
constexpr int kBackwardBlock = 256;      // 8 warps, each with its own dweight/dbias partials
constexpr int kBackwardMaxBlocks = 528;  // 4 blocks on each of an H100's 132 SMs

// mean = sum(x)/C, var = sum((x-mean)^2)/C (two passes: no cancellation), then
// out = (x - mean) * rstd * weight + bias.
template <int W>
__global__ void layernorm_forward_kernel(bf16* __restrict__ out, float* __restrict__ mean, float* __restrict__ rstd,
                                         const bf16* __restrict__ inp, const bf16* __restrict__ weight,
                                         const bf16* __restrict__ bias, int N, int C) {
  const int lane = threadIdx.x % kWarp;
  const int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (row >= N) return;  // the whole warp leaves together
  const bf16* x_row = inp + static_cast<std::size_t>(row) * C;

  float sum = 0.f;
  for (int c0 = lane * W; c0 < C; c0 += kWarp * W) {
    float x[W];
    load_bf16<W>(x, x_row + c0);
#pragma unroll
    for (int k = 0; k < W; ++k) sum += x[k];
  }
  const float m = warp_sum(sum) / C;
  float sq = 0.f;
  for (int c0 = lane * W; c0 < C; c0 += kWarp * W) {
    float x[W];
    load_bf16<W>(x, x_row + c0);
#pragma unroll
    for (int k = 0; k < W; ++k) sq += (x[k] - m) * (x[k] - m);
  }
  const float s = rsqrtf(warp_sum(sq) / C + kEps);

  bf16* o_row = out + static_cast<std::size_t>(row) * C;
  for (int c0 = lane * W; c0 < C; c0 += kWarp * W) {
    float x[W], w[W], b[W];
    load_bf16<W>(x, x_row + c0);
    load_bf16<W>(w, weight + c0);
    load_bf16<W>(b, bias + c0);
#pragma unroll
    for (int k = 0; k < W; ++k) x[k] = (x[k] - m) * s * w[k] + b[k];
    store_bf16<W>(o_row + c0, x);
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

// Per row, with g = dout * weight: pass 1 sums g and g * xhat over the row; pass 2 adds
// rstd * (g - mean(g) - xhat * mean(g * xhat)) into dinp and collects dout * xhat and dout
// per channel in its warp's shared partials (each channel belongs to one lane of the warp:
// plain adds, rows in order). At the end the block sums its warps' partials in warp order
// into block_partials[block, 2C] (dweight's C, then dbias's), which add_column_sums adds up
// in block order: no atomics, the same bits on every run (common.cuh, reduction_scratch).
// Shared slot of channel c: with W = 8 it is (c % 8) * (C / 8) + c / 8, so the 32 lanes
// adding element k of their groups hit 32 consecutive words (no bank conflicts).
template <int W>
__global__ void layernorm_backward_kernel(bf16* __restrict__ dinp, float* __restrict__ block_partials,
                                          const bf16* __restrict__ dout, const bf16* __restrict__ inp,
                                          const bf16* __restrict__ weight, const float* __restrict__ mean,
                                          const float* __restrict__ rstd, int N, int C) {
  extern __shared__ float partials[];  // (warps, 2, C): per warp dweight then dbias
  const int groups = C / W;
  for (int c = threadIdx.x; c < 2 * C * static_cast<int>(blockDim.x / kWarp); c += blockDim.x) partials[c] = 0.f;
  __syncthreads();
  float* dweight_s = partials + static_cast<std::size_t>(threadIdx.x / kWarp) * 2 * C;
  float* dbias_s = dweight_s + C;

  const int lane = threadIdx.x % kWarp, warps = blockDim.x / kWarp;
  for (int row = blockIdx.x * warps + threadIdx.x / kWarp; row < N; row += gridDim.x * warps) {
    const std::size_t base = static_cast<std::size_t>(row) * C;
    const float m = mean[row], s = rstd[row];

    float sum_g = 0.f, sum_gx = 0.f;
    for (int c0 = lane * W; c0 < C; c0 += kWarp * W) {
      float x[W], dy[W], w[W];
      load_bf16<W>(x, inp + base + c0);
      load_bf16<W>(dy, dout + base + c0);
      load_bf16<W>(w, weight + c0);
#pragma unroll
      for (int k = 0; k < W; ++k) {
        const float g = dy[k] * w[k];
        sum_g += g;
        sum_gx += g * (x[k] - m) * s;
      }
    }
    const float mean_g = warp_sum(sum_g) / C, mean_gx = warp_sum(sum_gx) / C;

    for (int c0 = lane * W; c0 < C; c0 += kWarp * W) {
      float x[W], dy[W], w[W], dx[W];
      load_bf16<W>(x, inp + base + c0);
      load_bf16<W>(dy, dout + base + c0);
      load_bf16<W>(w, weight + c0);
      load_bf16<W>(dx, dinp + base + c0);
#pragma unroll
      for (int k = 0; k < W; ++k) {
        const float xhat = (x[k] - m) * s;
        dx[k] += s * (dy[k] * w[k] - mean_g - xhat * mean_gx);
        const int slot = k * groups + c0 / W;
        dweight_s[slot] += dy[k] * xhat;
        dbias_s[slot] += dy[k];
      }
      store_bf16<W>(dinp + base + c0, dx);
    }
  }
  __syncthreads();
  float* out = block_partials + static_cast<std::size_t>(blockIdx.x) * 2 * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const int slot = (c % W) * groups + c / W;
    float w = 0.f, b = 0.f;
    for (int v = 0; v < warps; ++v) {
      w += partials[static_cast<std::size_t>(v) * 2 * C + slot];
      b += partials[static_cast<std::size_t>(v) * 2 * C + C + slot];
    }
    out[c] = w;
    out[C + c] = b;
  }
}

bool use_vectors(int C, std::initializer_list<const void*> pointers) {
  if (C % 8 != 0) return false;
  for (const void* p : pointers)
    if (!aligned16(p)) return false;
  return true;
}

}  // namespace

void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* weight, const bf16* bias,
                       int N, int C, cudaStream_t stream) {
  require(N >= 0 && C > 0, "layernorm_forward: N must be >= 0 and C > 0");
  if (N == 0) return;
  const int blocks = ceil_div(N, kForwardBlock / kWarp);
  if (use_vectors(C, {out, inp, weight, bias}))
    layernorm_forward_kernel<8><<<blocks, kForwardBlock, 0, stream>>>(out, mean, rstd, inp, weight, bias, N, C);
  else
    layernorm_forward_kernel<1><<<blocks, kForwardBlock, 0, stream>>>(out, mean, rstd, inp, weight, bias, N, C);
  check_launch("layernorm_forward");
}

void layernorm_backward(bf16* dinp, float* dweight, float* dbias, const bf16* dout, const bf16* inp,
                        const bf16* weight, const float* mean, const float* rstd, int N, int C, cudaStream_t stream) {
  require(N >= 0 && C > 0, "layernorm_backward: N must be >= 0 and C > 0");
  if (N == 0) return;
  const bool vectors = use_vectors(C, {dinp, dout, inp, weight});
  const auto kernel = vectors ? layernorm_backward_kernel<8> : layernorm_backward_kernel<1>;
  const std::size_t shared = static_cast<std::size_t>(kBackwardBlock / kWarp) * 2 * static_cast<std::size_t>(C) * sizeof(float);
  if (shared > 48 * 1024) {  // above the default limit a kernel must opt in (fails past the device's maximum)
    const cudaError_t rc =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (rc != cudaSuccess) {
      (void)cudaGetLastError();  // clear it, or the next launch check would report it
      throw std::invalid_argument("ddp kernels: layernorm_backward: C = " + std::to_string(C) +
                                  " needs more shared memory than the device has: " + cudaGetErrorString(rc));
    }
  }
  const int blocks = std::min(ceil_div(N, kBackwardBlock / kWarp), kBackwardMaxBlocks);
  auto* block_partials =
      static_cast<float*>(reduction_scratch(static_cast<std::size_t>(blocks) * 2 * C * sizeof(float)));
  kernel<<<blocks, kBackwardBlock, shared, stream>>>(dinp, block_partials, dout, inp, weight, mean, rstd, N, C);
  check_launch("layernorm_backward");
  add_column_sums(dweight, dbias, C, block_partials, blocks, 2 * C, stream);
}

}  // namespace gpuaccept::ddp::gpu
