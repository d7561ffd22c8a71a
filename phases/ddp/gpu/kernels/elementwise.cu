// Elementwise kernels: residual add, GELU and its backward, fp32 -> bf16.
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

// out[i] = bf16(in[i]), round to nearest even.
template <int W>
__global__ void cast_to_bf16_kernel(bf16* __restrict__ out, const float* __restrict__ in, std::size_t n) {
  for (std::size_t i = global_thread() * W; i < n; i += global_threads() * W) {
    if (i + W <= n) {
      float x[W];
      if constexpr (W == 8) {
        const float4 lo = *reinterpret_cast<const float4*>(in + i);
        const float4 hi = *reinterpret_cast<const float4*>(in + i + 4);
        const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = v[k];
      } else {
        x[0] = in[i];
      }
      store_bf16<W>(out + i, x);
    } else {
      for (std::size_t j = i; j < n; ++j) out[j] = __float2bfloat16(in[j]);
    }
  }
}

// out[i] = float(in[i]): exact (bf16 is fp32 with the low 16 mantissa bits dropped).
template <int W>
__global__ void cast_to_fp32_kernel(float* __restrict__ out, const bf16* __restrict__ in, std::size_t n) {
  for (std::size_t i = global_thread() * W; i < n; i += global_threads() * W) {
    if (i + W <= n) {
      float x[W];
      load_bf16<W>(x, in + i);
      if constexpr (W == 8) {
        *reinterpret_cast<float4*>(out + i) = make_float4(x[0], x[1], x[2], x[3]);
        *reinterpret_cast<float4*>(out + i + 4) = make_float4(x[4], x[5], x[6], x[7]);
      } else {
        out[i] = x[0];
      }
    } else {
      for (std::size_t j = i; j < n; ++j) out[j] = __bfloat162float(in[j]);
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

void cast_to_bf16(bf16* out, const float* in, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (aligned16(out) && aligned16(in))
    cast_to_bf16_kernel<8><<<grid_for(ceil_div<std::size_t>(n, 8), kBlock), kBlock, 0, stream>>>(out, in, n);
  else
    cast_to_bf16_kernel<1><<<grid_for(n, kBlock), kBlock, 0, stream>>>(out, in, n);
  check_launch("cast_to_bf16");
}

void cast_to_fp32(float* out, const bf16* in, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (aligned16(out) && aligned16(in))
    cast_to_fp32_kernel<8><<<grid_for(ceil_div<std::size_t>(n, 8), kBlock), kBlock, 0, stream>>>(out, in, n);
  else
    cast_to_fp32_kernel<1><<<grid_for(n, kBlock), kBlock, 0, stream>>>(out, in, n);
  check_launch("cast_to_fp32");
}

}  // namespace gpuaccept::ddp::gpu
