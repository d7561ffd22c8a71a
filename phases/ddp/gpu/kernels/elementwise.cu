// Elementwise kernels: residual add, GELU and its backward, the average of slices. (fp32 ->
// bf16, and a gradient bucket's parts packed as bf16 and back, are src/train's, shared with
// fsdp-lora: train/kernels/bf16_casts.cu.)
// Each thread takes 8 consecutive values with 16-byte accesses when every pointer is
// aligned (these tensors are large: 4C per row for the MLP), one value otherwise.
#include "common.cuh"

namespace gpuaccept::ddp::gpu {

using namespace detail;

namespace {

constexpr int kBlock = 256;
constexpr float kGeluS = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluC = 0.044715f;

struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// y = x/2 * (1 + tanh(s (x + 0.044715 x^3)))
struct Gelu {
  __device__ float operator()(float x, float) const {
    return 0.5f * x * (1.f + tanhf(kGeluS * (x + kGeluC * x * x * x)));
  }
};

// d * y'(x), y' = (1 + tanh u)/2 + x/2 * (1 - tanh^2 u) * s (1 + 3 * 0.044715 x^2)
struct GeluBackward {
  __device__ float operator()(float d, float x) const {
    const float th = tanhf(kGeluS * (x + kGeluC * x * x * x));
    const float du = kGeluS * (1.f + 3.f * kGeluC * x * x);
    return d * (0.5f * (1.f + th) + 0.5f * x * (1.f - th * th) * du);
  }
};

// out[i] = op(a[i], b[i]). out may alias a (in place): each value is read and written by
// the same thread. The last, partial group of W goes value by value.
template <int W, typename Op>
__global__ void map_kernel(bf16* out, const bf16* a, const bf16* b, std::size_t n, Op op) {
  for (std::size_t i = global_thread() * W; i < n; i += global_threads() * W) {
    if (i + W <= n) {
      float x[W], y[W];
      load_bf16<W>(x, a + i);
      load_bf16<W>(y, b + i);
#pragma unroll
      for (int k = 0; k < W; ++k) x[k] = op(x[k], y[k]);
      store_bf16<W>(out + i, x);
    } else {
      for (std::size_t j = i; j < n; ++j) out[j] = __float2bfloat16(op(__bfloat162float(a[j]), __bfloat162float(b[j])));
    }
  }
}

template <typename Op>
void launch_map(const char* name, bf16* out, const bf16* a, const bf16* b, std::size_t n, Op op,
                cudaStream_t stream) {
  if (n == 0) return;
  if (aligned16(out) && aligned16(a) && aligned16(b))
    map_kernel<8><<<grid_for(ceil_div<std::size_t>(n, 8), kBlock), kBlock, 0, stream>>>(out, a, b, n, op);
  else
    map_kernel<1><<<grid_for(n, kBlock), kBlock, 0, stream>>>(out, a, b, n, op);
  check_launch(name);
}

// out[i] = bf16(sum_k in.p[k][i] / count), summed in k's order. No __restrict__: out may
// be one of the inputs.
template <int W>
__global__ void average_bf16_kernel(bf16* out, Bf16Slices in, std::size_t n) {
  const float scale = 1.f / static_cast<float>(in.count);
  for (std::size_t i = global_thread() * W; i < n; i += global_threads() * W) {
    if (i + W <= n) {
      float sum[W], x[W];
      load_bf16<W>(sum, in.p[0] + i);
      for (int k = 1; k < in.count; ++k) {
        load_bf16<W>(x, in.p[k] + i);
#pragma unroll
        for (int j = 0; j < W; ++j) sum[j] += x[j];
      }
#pragma unroll
      for (int j = 0; j < W; ++j) sum[j] *= scale;
      store_bf16<W>(out + i, sum);
    } else {
      for (std::size_t j = i; j < n; ++j) {
        float v = 0.f;
        for (int k = 0; k < in.count; ++k) v += __bfloat162float(in.p[k][j]);
        out[j] = __float2bfloat16(v * scale);
      }
    }
  }
}

}  // namespace

void residual_forward(bf16* out, const bf16* a, const bf16* b, std::size_t n, cudaStream_t stream) {
  launch_map("residual_forward", out, a, b, n, Add{}, stream);
}

void gelu_forward(bf16* out, const bf16* inp, std::size_t n, cudaStream_t stream) {
  launch_map("gelu_forward", out, inp, inp, n, Gelu{}, stream);
}

void gelu_backward_inplace(bf16* d, const bf16* inp, std::size_t n, cudaStream_t stream) {
  launch_map("gelu_backward_inplace", d, d, inp, n, GeluBackward{}, stream);
}

void average_bf16(bf16* out, const Bf16Slices& in, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  require(in.count >= 1 && in.count <= kMaxAveragedSlices, "average_bf16: 1 to kMaxAveragedSlices slices");
  bool aligned = aligned16(out);
  for (int k = 0; k < in.count; ++k) aligned = aligned && aligned16(in.p[k]);
  if (aligned)
    average_bf16_kernel<8><<<grid_for(ceil_div<std::size_t>(n, 8), kBlock), kBlock, 0, stream>>>(out, in, n);
  else
    average_bf16_kernel<1><<<grid_for(n, kBlock), kBlock, 0, stream>>>(out, in, n);
  check_launch("average_bf16");
}

}  // namespace gpuaccept::ddp::gpu
