// LayerNorm over the channels of each row, one warp per row (llm.c's layernorm kernels).
// Lane L owns the groups of W channels starting at W*L, W*(L+32), ... (W = 8, 16-byte
// accesses, when C % 8 == 0 and the pointers are aligned; else W = 1). The forward holds a
// row in registers for C <= 1024 with 16-byte accesses; otherwise it re-reads the row
// (C <= 1600 bf16) from L1 between its passes. The backward has two kernels: for
// C <= 1024 with 16-byte accesses (GPT-2 124M and 350M) each lane holds its row (the next one
// arriving in shared memory meanwhile) and its channels' partial sums in registers; otherwise
// each warp holds partials in shared memory.
#include "common.cuh"
#include "train/kernels/tensor_core.cuh"

namespace gpuaccept::ddp::gpu {

using namespace detail;

namespace {

constexpr float kEps = 1e-5f;
constexpr int kForwardBlock = 256;       // 8 rows per block
constexpr int kBackwardBlock = 256;      // 8 warps, each with its own dweight/dbias partials
// The backward grids are sized for an H100's or H200's 132 SMs whatever the device: the grid
// sets the sums' grouping, so the same bits on every GPU (replicas compare hashes).
constexpr int kGridSms = 132;

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

// The forward again, for C <= 256 * kGroups with 16-byte accesses (GPT-2 124M's 768: kGroups
// 3): the lane's groups of the row come into registers at once, all loads in flight together,
// instead of one group at a time inside the first pass's loop (each a wait on memory) and again
// from L1 in the other two. The sums run over the same groups in the same order: the same bits.
template <int kGroups>
__global__ void layernorm_forward_rows_kernel(bf16* __restrict__ out, float* __restrict__ mean,
                                              float* __restrict__ rstd, const bf16* __restrict__ inp,
                                              const bf16* __restrict__ weight, const bf16* __restrict__ bias, int N,
                                              int C) {
  constexpr int W = 8;
  const int lane = threadIdx.x % kWarp;
  const int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (row >= N) return;  // the whole warp leaves together
  const bf16* x_row = inp + static_cast<std::size_t>(row) * C;
  auto first = [&](int j) { return W * (lane + kWarp * j); };  // channel c0 of group j

  int4 x_raw[kGroups];  // the lane's groups of the row, as stored (bf16 x 8)
#pragma unroll
  for (int j = 0; j < kGroups; ++j)
    if (first(j) < C) x_raw[j] = *reinterpret_cast<const int4*>(x_row + first(j));
  // Each of the three passes visits the lane's groups in the same order, unpacked to fp32.
  auto each_group = [&](auto&& visit) {
#pragma unroll
    for (int j = 0; j < kGroups; ++j) {
      if (first(j) >= C) continue;
      float x[W];
      load_bf16<W>(x, reinterpret_cast<const bf16*>(&x_raw[j]));
      visit(j, x);
    }
  };
  float sum = 0.f;
  each_group([&](int, float (&x)[W]) {
#pragma unroll
    for (int k = 0; k < W; ++k) sum += x[k];
  });
  const float m = warp_sum(sum) / C;
  float sq = 0.f;
  each_group([&](int, float (&x)[W]) {
#pragma unroll
    for (int k = 0; k < W; ++k) sq += (x[k] - m) * (x[k] - m);
  });
  const float s = rsqrtf(warp_sum(sq) / C + kEps);

  bf16* o_row = out + static_cast<std::size_t>(row) * C;
  each_group([&](int j, float (&x)[W]) {
    float w[W], b[W];
    load_bf16<W>(w, weight + first(j));
    load_bf16<W>(b, bias + first(j));
#pragma unroll
    for (int k = 0; k < W; ++k) x[k] = (x[k] - m) * s * w[k] + b[k];
    store_bf16<W>(o_row + first(j), x);
  });
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

// Per row, with g = dout * weight: pass 1 sums g and g * xhat over the row; pass 2 adds
// rstd * (g - mean(g) - xhat * mean(g * xhat)) into dinp and collects dout * xhat and dout
// per channel in its warp's shared partials (each channel belongs to one lane of the warp:
// plain adds, rows in order); with kParts == 3 also the new dinp as stored (bf16), whose
// column sums are the bias gradient of the linear layer that dinp flows into next (the
// residual stream's: gpt_model.cpp). At the end the block sums its warps' partials in warp
// order into block_partials[block, kParts * C] (dweight's C, dbias's, then dinp's), which
// add_column_sums adds up in block order: no atomics, the same bits on every run (common.cuh,
// reduction_scratch).
// Shared slot of channel c: with W = 8 it is (c % 8) * (C / 8) + c / 8, so the 32 lanes
// adding element k of their groups hit 32 consecutive words (no bank conflicts).
template <int W, int kParts>
__global__ void layernorm_backward_kernel(bf16* __restrict__ dinp, float* __restrict__ block_partials,
                                          const bf16* __restrict__ dout, const bf16* __restrict__ inp,
                                          const bf16* __restrict__ weight, const float* __restrict__ mean,
                                          const float* __restrict__ rstd, int N, int C) {
  static_assert(kParts == 2 || kParts == 3);
  extern __shared__ float partials[];  // (warps, kParts, C): per warp dweight, dbias (, dinp)
  const int groups = C / W;
  for (int c = threadIdx.x; c < kParts * C * static_cast<int>(blockDim.x / kWarp); c += blockDim.x) partials[c] = 0.f;
  __syncthreads();
  float* dweight_s = partials + static_cast<std::size_t>(threadIdx.x / kWarp) * kParts * C;
  float* dbias_s = dweight_s + C;
  float* dinp_s = dbias_s + C;  // kParts == 3 only

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
        if constexpr (kParts == 3) {
          dx[k] = __bfloat162float(__float2bfloat16(dx[k]));  // the value stored below, exactly
          dinp_s[slot] += dx[k];
        }
      }
      store_bf16<W>(dinp + base + c0, dx);
    }
  }
  __syncthreads();
  float* out = block_partials + static_cast<std::size_t>(blockIdx.x) * kParts * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const int slot = (c % W) * groups + c / W;
#pragma unroll
    for (int part = 0; part < kParts; ++part) {
      float sum = 0.f;
      for (int v = 0; v < warps; ++v) sum += partials[(static_cast<std::size_t>(v) * kParts + part) * C + slot];
      out[part * C + c] = sum;
    }
  }
}

// The backward again, for C <= 256 * kGroups with 16-byte accesses (GPT-2 124M's 768:
// kGroups 3): lane L owns the channels of its groups j < kGroups, c0 = 8 (L + 32 j). Each lane
// keeps its channels' partials (dweight, dbias, dinp's sums) in registers over all the rows
// its warp takes, and a row's inp, dout and dinp in registers between the passes, all their
// loads in flight at once. The arithmetic per element is the kernel's above; only the sums'
// grouping differs. That kernel keeps a partial per warp and channel in shared memory: 9 KiB
// a warp at C = 768 with dinp's sums, which leaves its re-reads of a row hardly any L1 (49.6 us
// a call on an H200, 2026-11-28, for 100 MB of traffic). At the end the block's warps add
// their partials into shared memory one after the other (warp order: the same bits on every
// run) and the block writes its row of block_partials (kParts * C, as above).
// The warp's next row (inp, dout, dinp, mean and rstd) comes into shared memory by cp.async
// while it works on this one. With 168 of the 170 registers the launch bounds allow already
// taken, a second row could not be held in registers, and a warp that waited for each row's
// loads before its arithmetic left the memory idle through it: 36.9 us a call on an H200 for
// 100 MB (2.7 TB/s), 33.8 us since (docs/performance.md, session 6).
constexpr int kRowsBlock = 128;  // 4 warps
constexpr int kRowsMaxGroups = 4;
constexpr int rows_blocks_per_sm(int groups) { return groups <= 2 ? 4 : (groups == 3 ? 3 : 2); }

template <int kGroups, int kParts>
__global__ void __launch_bounds__(kRowsBlock, rows_blocks_per_sm(kGroups))
    layernorm_backward_rows_kernel(bf16* __restrict__ dinp, float* __restrict__ block_partials,
                                   const bf16* __restrict__ dout, const bf16* __restrict__ inp,
                                   const bf16* __restrict__ weight, const float* __restrict__ mean,
                                   const float* __restrict__ rstd, int N, int C) {
  static_assert(kParts == 2 || kParts == 3);
  static_assert(kGroups >= 1 && kGroups <= kRowsMaxGroups);
  constexpr int W = 8;
  constexpr int kWarps = kRowsBlock / kWarp;
  __shared__ float block_sums[kParts * kRowsMaxGroups * kWarp * W];  // (kParts, C)
  // (warps, 3, kGroups * 32) 16-byte chunks: each warp's next row of inp, dout and dinp, each
  // lane's own chunks (lane + 32 j), and the row's mean and rstd.
  __shared__ int4 next_row[kWarps][3][kGroups * kWarp];
  __shared__ float next_stats[kWarps][2];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = kWarps;
  auto first = [&](int j) { return W * (lane + kWarp * j); };  // channel c0 of group j
  auto prefetch = [&](int row) {  // this lane's chunks of `row`, into the warp's slots; one cp.async group
    const std::size_t base = static_cast<std::size_t>(row) * C;
#pragma unroll
    for (int j = 0; j < kGroups; ++j) {
      if (first(j) >= C) continue;
      const int slot = lane + kWarp * j;
      train::tc::copy_async16(&next_row[warp][0][slot], inp + base + first(j));
      train::tc::copy_async16(&next_row[warp][1][slot], dout + base + first(j));
      train::tc::copy_async16(&next_row[warp][2][slot], dinp + base + first(j));
    }
    if (lane == 0) {
      train::tc::copy_async4(&next_stats[warp][0], mean + row);
      train::tc::copy_async4(&next_stats[warp][1], rstd + row);
    }
    train::tc::commit();
  };

  float w[kGroups][W];
  float acc[kParts][kGroups][W] = {};  // dweight, dbias (, dinp) partials of this lane's channels
#pragma unroll
  for (int j = 0; j < kGroups; ++j)
    if (first(j) < C) load_bf16<W>(w[j], weight + first(j));

  const int stride = gridDim.x * warps;
  if (blockIdx.x * warps + warp < N) prefetch(blockIdx.x * warps + warp);
  for (int row = blockIdx.x * warps + warp; row < N; row += stride) {
    const std::size_t base = static_cast<std::size_t>(row) * C;
    int4 x_raw[kGroups], dy_raw[kGroups], dx_raw[kGroups];  // the row, as stored (bf16 x 8)
    train::tc::wait<0>();
    __syncwarp();  // every lane's chunks (and lane 0's mean and rstd) are in
#pragma unroll
    for (int j = 0; j < kGroups; ++j) {
      if (first(j) >= C) continue;
      const int slot = lane + kWarp * j;
      x_raw[j] = next_row[warp][0][slot];
      dy_raw[j] = next_row[warp][1][slot];
      dx_raw[j] = next_row[warp][2][slot];
    }
    const float m = next_stats[warp][0], s = next_stats[warp][1];
    __syncwarp();  // the slots are read: the next row may come in
    if (row + stride < N) prefetch(row + stride);

    float sum_g = 0.f, sum_gx = 0.f;
#pragma unroll
    for (int j = 0; j < kGroups; ++j) {
      if (first(j) >= C) continue;
      float x[W], dy[W];
      load_bf16<W>(x, reinterpret_cast<const bf16*>(&x_raw[j]));
      load_bf16<W>(dy, reinterpret_cast<const bf16*>(&dy_raw[j]));
#pragma unroll
      for (int k = 0; k < W; ++k) {
        const float g = dy[k] * w[j][k];
        sum_g += g;
        sum_gx += g * (x[k] - m) * s;
      }
    }
    const float mean_g = warp_sum(sum_g) / C, mean_gx = warp_sum(sum_gx) / C;

#pragma unroll
    for (int j = 0; j < kGroups; ++j) {
      if (first(j) >= C) continue;
      float x[W], dy[W], dx[W];
      load_bf16<W>(x, reinterpret_cast<const bf16*>(&x_raw[j]));
      load_bf16<W>(dy, reinterpret_cast<const bf16*>(&dy_raw[j]));
      load_bf16<W>(dx, reinterpret_cast<const bf16*>(&dx_raw[j]));
#pragma unroll
      for (int k = 0; k < W; ++k) {
        const float xhat = (x[k] - m) * s;
        dx[k] += s * (dy[k] * w[j][k] - mean_g - xhat * mean_gx);
        acc[0][j][k] += dy[k] * xhat;
        acc[1][j][k] += dy[k];
        if constexpr (kParts == 3) {
          dx[k] = __bfloat162float(__float2bfloat16(dx[k]));  // the value stored below, exactly
          acc[2][j][k] += dx[k];
        }
      }
      store_bf16<W>(dinp + base + first(j), dx);
    }
  }

  for (int v = 0; v < warps; ++v) {
    if (warp == v) {
#pragma unroll
      for (int part = 0; part < kParts; ++part)
#pragma unroll
        for (int j = 0; j < kGroups; ++j) {
          if (first(j) >= C) continue;
#pragma unroll
          for (int k = 0; k < W; ++k) {
            float& slot = block_sums[part * C + first(j) + k];
            slot = (v == 0 ? 0.f : slot) + acc[part][j][k];
          }
        }
    }
    __syncthreads();
  }
  float* out = block_partials + static_cast<std::size_t>(blockIdx.x) * kParts * C;
  for (int i = threadIdx.x; i < kParts * C; i += blockDim.x) out[i] = block_sums[i];
}

bool use_vectors(int C, std::initializer_list<const void*> pointers) {
  if (C % 8 != 0) return false;
  for (const void* p : pointers)
    if (!aligned16(p)) return false;
  return true;
}

// Blocks a launch of kParts partials at C channels: as many as fit on an H100's 132 SMs at
// once (228 KiB of shared memory each, 1 KiB of it reserved per block), 1 to 4 an SM. A
// constant, not the device's own figure, so that the sums' grouping, and with it their bits,
// is the same on every GPU (replicas compare hashes).
int backward_blocks(int N, std::size_t shared) {
  constexpr std::size_t kSmShared = 228 * 1024, kReserved = 1024;
  constexpr int kMaxPerSm = 4;
  const int per_sm = std::clamp(static_cast<int>(kSmShared / (shared + kReserved)), 1, kMaxPerSm);
  return std::min(ceil_div(N, kBackwardBlock / kWarp), per_sm * kGridSms);
}

// The register kernel's launch: a grid of as many blocks as an H100's 132 SMs hold at once
// (a constant, for the same bits on every GPU, as above), its partials summed into `sums`.
template <int kGroups, int kParts>
void launch_backward_rows(bf16* dinp, const ColumnSumParts& sums, const bf16* dout, const bf16* inp,
                          const bf16* weight, const float* mean, const float* rstd, int N, int C, cudaStream_t stream) {
  const int blocks = std::min(ceil_div(N, kRowsBlock / kWarp), kGridSms * rows_blocks_per_sm(kGroups));
  auto* block_partials =
      static_cast<float*>(reduction_scratch(static_cast<std::size_t>(blocks) * kParts * C * sizeof(float)));
  layernorm_backward_rows_kernel<kGroups, kParts>
      <<<blocks, kRowsBlock, 0, stream>>>(dinp, block_partials, dout, inp, weight, mean, rstd, N, C);
  check_launch("layernorm_backward");
  add_column_sums(sums, block_partials, blocks, stream);
}

template <int kParts>
void launch_backward(bf16* dinp, const ColumnSumParts& sums, const bf16* dout, const bf16* inp, const bf16* weight,
                     const float* mean, const float* rstd, int N, int C, cudaStream_t stream) {
  const bool vectors = use_vectors(C, {dinp, dout, inp, weight});
  if (vectors && C <= kRowsMaxGroups * kWarp * 8) {
    switch (ceil_div(C, kWarp * 8)) {
      case 1: return launch_backward_rows<1, kParts>(dinp, sums, dout, inp, weight, mean, rstd, N, C, stream);
      case 2: return launch_backward_rows<2, kParts>(dinp, sums, dout, inp, weight, mean, rstd, N, C, stream);
      case 3: return launch_backward_rows<3, kParts>(dinp, sums, dout, inp, weight, mean, rstd, N, C, stream);
      default: return launch_backward_rows<4, kParts>(dinp, sums, dout, inp, weight, mean, rstd, N, C, stream);
    }
  }
  const auto kernel = vectors ? layernorm_backward_kernel<8, kParts> : layernorm_backward_kernel<1, kParts>;
  const std::size_t shared =
      static_cast<std::size_t>(kBackwardBlock / kWarp) * kParts * static_cast<std::size_t>(C) * sizeof(float);
  if (shared > 48 * 1024) {  // above the default limit a kernel must opt in (fails past the device's maximum)
    const cudaError_t rc =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (rc != cudaSuccess) {
      (void)cudaGetLastError();  // clear it, or the next launch check would report it
      throw std::invalid_argument("ddp kernels: layernorm_backward: C = " + std::to_string(C) +
                                  " needs more shared memory than the device has: " + cudaGetErrorString(rc));
    }
  }
  const int blocks = backward_blocks(N, shared);
  auto* block_partials =
      static_cast<float*>(reduction_scratch(static_cast<std::size_t>(blocks) * kParts * C * sizeof(float)));
  kernel<<<blocks, kBackwardBlock, shared, stream>>>(dinp, block_partials, dout, inp, weight, mean, rstd, N, C);
  check_launch("layernorm_backward");
  add_column_sums(sums, block_partials, blocks, stream);
}

}  // namespace

void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* weight, const bf16* bias,
                       int N, int C, cudaStream_t stream) {
  require(N >= 0 && C > 0, "layernorm_forward: N must be >= 0 and C > 0");
  if (N == 0) return;
  const int blocks = ceil_div(N, kForwardBlock / kWarp);
  const bool vectors = use_vectors(C, {out, inp, weight, bias});
  if (vectors && C <= kRowsMaxGroups * kWarp * 8) {
    const auto kernel = [&] {
      switch (ceil_div(C, kWarp * 8)) {
        case 1: return layernorm_forward_rows_kernel<1>;
        case 2: return layernorm_forward_rows_kernel<2>;
        case 3: return layernorm_forward_rows_kernel<3>;
        default: return layernorm_forward_rows_kernel<4>;
      }
    }();
    kernel<<<blocks, kForwardBlock, 0, stream>>>(out, mean, rstd, inp, weight, bias, N, C);
  } else if (vectors)
    layernorm_forward_kernel<8><<<blocks, kForwardBlock, 0, stream>>>(out, mean, rstd, inp, weight, bias, N, C);
  else
    layernorm_forward_kernel<1><<<blocks, kForwardBlock, 0, stream>>>(out, mean, rstd, inp, weight, bias, N, C);
  check_launch("layernorm_forward");
}

void layernorm_backward(bf16* dinp, float* dweight, float* dbias, float* dinp_sums, const bf16* dout,
                        const bf16* inp, const bf16* weight, const float* mean, const float* rstd, int N, int C,
                        cudaStream_t stream) {
  require(N >= 0 && C > 0, "layernorm_backward: N must be >= 0 and C > 0");
  if (N == 0) return;
  if (dinp_sums)
    launch_backward<3>(dinp, {{dweight, dbias, dinp_sums}, 3, C}, dout, inp, weight, mean, rstd, N, C, stream);
  else
    launch_backward<2>(dinp, {{dweight, dbias}, 2, C}, dout, inp, weight, mean, rstd, N, C, stream);
}

}  // namespace gpuaccept::ddp::gpu
