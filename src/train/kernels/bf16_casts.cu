// fp32 <-> bf16 for both training phases (train/bf16_cast_kernels.h): the bf16 weights from the
// fp32 master copy (cast_to_bf16), and a gradient bucket's parts packed side by side as bf16
// for the all-reduce and back (ddp's gpu/gradient_sync.h). One kernel body does all three:
// cast_to_bf16 is a bucket of one part, packed.
#include "train/bf16_cast_kernels.h"
#include "train/kernels/common.cuh"

namespace gpuaccept::train {

using namespace detail;

namespace {

constexpr int kBlock = 256;

// Part blockIdx.y of a bucket, grid-stride over its elements in x: packed <- fp32 (kPack) or
// back. 8 values a thread with 16-byte accesses where both ends of the part are aligned.
template <bool kPack>
__global__ void packed_parts_kernel(bf16* packed, PackedParts parts) {
  const int k = blockIdx.y;
  float* const f = parts.fp32[k];
  bf16* const b = packed + parts.at[k];
  const std::size_t n = parts.count[k];
  const bool vec = (reinterpret_cast<std::uintptr_t>(f) | reinterpret_cast<std::uintptr_t>(b)) % 16 == 0;
  const std::size_t w = vec ? 8 : 1;
  for (std::size_t i = global_thread() * w; i < n; i += global_threads() * w) {
    if (vec && i + 8 <= n) {
      float x[8];
      if constexpr (kPack) {
        const float4 lo = *reinterpret_cast<const float4*>(f + i);
        const float4 hi = *reinterpret_cast<const float4*>(f + i + 4);
        x[0] = lo.x, x[1] = lo.y, x[2] = lo.z, x[3] = lo.w, x[4] = hi.x, x[5] = hi.y, x[6] = hi.z, x[7] = hi.w;
        store_bf16<8>(b + i, x);
      } else {
        load_bf16<8>(x, b + i);
        *reinterpret_cast<float4*>(f + i) = make_float4(x[0], x[1], x[2], x[3]);
        *reinterpret_cast<float4*>(f + i + 4) = make_float4(x[4], x[5], x[6], x[7]);
      }
    } else {
      for (std::size_t j = i; j < n && j < i + w; ++j) {  // one value, or an aligned part's tail
        if constexpr (kPack)
          b[j] = __float2bfloat16(f[j]);
        else
          f[j] = __bfloat162float(b[j]);
      }
    }
  }
}

template <bool kPack>
void launch_packed_parts(const char* name, bf16* packed, const PackedParts& parts, cudaStream_t stream) {
  require(parts.parts >= 0 && parts.parts <= kMaxPackedParts, "packed parts: 0 to kMaxPackedParts parts");
  std::size_t largest = 0;
  for (int k = 0; k < parts.parts; ++k) largest = std::max(largest, parts.count[k]);
  if (largest == 0) return;
  const dim3 grid(grid_for(ceil_div<std::size_t>(largest, 8), kBlock), static_cast<unsigned>(parts.parts));
  packed_parts_kernel<kPack><<<grid, kBlock, 0, stream>>>(packed, parts);
  check_launch(name);
}

}  // namespace

void pack_to_bf16(bf16* packed, const PackedParts& parts, cudaStream_t stream) {
  launch_packed_parts<true>("pack_to_bf16", packed, parts, stream);
}

void unpack_to_fp32(const PackedParts& parts, const bf16* packed, cudaStream_t stream) {
  launch_packed_parts<false>("unpack_to_fp32", const_cast<bf16*>(packed), parts, stream);
}

// The bf16 weights from the fp32 master copy: a bucket of one part, packed.
void cast_to_bf16(bf16* out, const float* in, std::size_t n, cudaStream_t stream) {
  PackedParts whole;
  whole.fp32[0] = const_cast<float*>(in);  // read only: the kernel packs (kPack)
  whole.count[0] = n;
  whole.parts = 1;
  launch_packed_parts<true>("cast_to_bf16", out, whole, stream);
}

}  // namespace gpuaccept::train
