// The row-major matmul of kernels.h computed directly: one thread per output value, an fp32
// sum over K (row_major_gemm_value). Slow (no tiling, no tensor cores); it exists for shapes
// cuBLASLt refuses and as an independent second implementation for the model's tests.
#include "fsdp-lora/gpu/kernels/common.cuh"

namespace gpuaccept::fsdp::gpu {

namespace {

namespace td = detail::td;

constexpr int kBlock = 256;

using detail::check_launch;
using detail::require;

__global__ void naive_gemm_kernel(RowMajorGemm g) {
  const std::size_t per_batch = static_cast<std::size_t>(g.M) * g.N;
  const std::size_t items = per_batch * g.batch;
  for (std::size_t item = td::global_thread(); item < items; item += td::global_threads()) {
    const int z = static_cast<int>(item / per_batch);
    const int i = static_cast<int>(item % per_batch / g.N), j = static_cast<int>(item % g.N);
    const float v = row_major_gemm_value(g, z, i, j);  // reads C at (z, i, j) before D is written there
    const long long at = z * g.stride_d + static_cast<long long>(i) * g.ldd + j;
    if (g.fp32_out)
      static_cast<float*>(g.d)[at] = v;
    else
      static_cast<bf16*>(g.d)[at] = __float2bfloat16(v);
  }
}

}  // namespace

void naive_gemm(const RowMajorGemm& g, cudaStream_t stream) {
  require(g.M >= 0 && g.N >= 0 && g.K >= 0 && g.batch >= 1, "naive_gemm: negative size or batch < 1");
  require(g.a && g.b && g.d, "naive_gemm: null operand");
  const std::size_t items = static_cast<std::size_t>(g.M) * g.N * g.batch;
  if (items == 0) return;
  naive_gemm_kernel<<<td::grid_for(items, kBlock), kBlock, 0, stream>>>(g);
  check_launch("naive_gemm");
}

}  // namespace gpuaccept::fsdp::gpu
