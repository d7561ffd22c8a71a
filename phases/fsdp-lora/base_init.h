// Random frozen base weights for the fsdp-lora phase when no checkpoint is given, as a pure
// function of (seed, tensor, element index within the tensor): every rank fills only its own
// shards (on its GPU: gpu/kernels/base_init.cu), and the layer an all-gather rebuilds is the
// same bits whatever the number of ranks, so runs on 1 and N GPUs train the same model and the
// gradient check can build the very same base on the host (host_base_weights).
//
// Values: matrices, embedding, head and the q/k/v biases uniform in [-a, a) with a = 0.02 sqrt(3)
// (standard deviation 0.02, Hugging Face's initializer_range; biases nonzero as in
// cpu_reference.h's init_base, so their path is exercised); RMSNorm weights 1. Stored as bf16,
// rounded to nearest even. Computed in float with one rounding, so host and device agree bit
// for bit:  u = (splitmix64(key) >> 40) 2^-24 in [0, 1),  value = (2u - 1) a  (2u - 1 is exact).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "fsdp-lora/cpu_reference.h"
#include "fsdp-lora/qwen_config.h"
#include "fsdp-lora/shard_plan.h"

#if defined(__CUDACC__)
#define GPUACCEPT_HD __host__ __device__
#else
#define GPUACCEPT_HD
#endif

namespace gpuaccept::fsdp {

// Which tensor: the embedding, the head and the final norm have their own ids; a layer's
// tensor is kLayerTensorBase + layer * kLayerTensorStride + its index in LayerLayout::tensors.
inline constexpr std::uint64_t kEmbeddingTensor = 1, kHeadTensor = 2, kFinalNormTensor = 3;
inline constexpr std::uint64_t kLayerTensorBase = 16, kLayerTensorStride = 16;
inline constexpr float kInitStd = 0.02f;

GPUACCEPT_HD inline std::uint64_t init_mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The float value of element `index` of tensor `tensor` (before rounding to bf16); half_width
// 0 means the constant 1 (RMSNorm weights).
GPUACCEPT_HD inline float base_init_value(std::uint64_t seed, std::uint64_t tensor, std::uint64_t index,
                                          float half_width) {
  if (half_width == 0.0f) return 1.0f;
  const std::uint64_t bits = init_mix(init_mix(init_mix(seed) ^ tensor) + index);
  const float u = static_cast<float>(bits >> 40) * 0x1p-24f;
  return (2.0f * u - 1.0f) * half_width;
}

// bf16 bits of a finite float, rounded to nearest even (what __float2bfloat16 gives).
GPUACCEPT_HD inline std::uint16_t bf16_bits(float v) {
  std::uint32_t b;
#if defined(__CUDA_ARCH__)
  b = __float_as_uint(v);
#else
  std::memcpy(&b, &v, sizeof b);
#endif
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<std::uint16_t>(b >> 16);
}
inline double bf16_bits_to_double(std::uint16_t h) {
  const std::uint32_t b = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// The half width of a layer tensor's uniform draw: 0 (constant 1) for the two RMSNorm weights.
float layer_tensor_half_width(const TensorSlot& slot);
inline float matrix_half_width() { return kInitStd * 1.7320508075688772f; }
std::uint64_t layer_tensor_id(int layer, std::size_t slot_index);

// One run of elements to fill: dest[0, numel) = bf16(base_init_value(seed, tensor, first + i)).
struct InitPiece {
  std::uint64_t tensor;
  std::uint64_t first;      // element index within the tensor
  std::uint64_t numel;
  std::uint64_t dest_offset;  // elements from the start of the rank's buffer (layer shard or vocab shard)
  float half_width;
};
// What `rank` fills of one layer's shard (dest_offset within the shard; the rest of the shard is
// padding, 0), and of its embedding or head shard (dest_offset within the rows_per_rank x C
// buffer; rows beyond the vocabulary stay 0).
std::vector<InitPiece> layer_init_pieces(const ShardPlan& plan, int rank, int layer);
std::vector<InitPiece> vocab_init_pieces(const ShardPlan& plan, int rank, std::uint64_t tensor);

// The host twin of what the GPU fills: bf16 bits of rank's shard of `layer` (layer_shard_elems),
// of its embedding or head shard (vocab_rows_per_rank x C), and the final norm (C).
std::vector<std::uint16_t> host_layer_shard(const ShardPlan& plan, int rank, int layer, std::uint64_t seed);
std::vector<std::uint16_t> host_vocab_shard(const ShardPlan& plan, int rank, std::uint64_t tensor, std::uint64_t seed);
// The whole base as the CPU reference takes it (values exactly the bf16 ones, as doubles).
QwenBaseWeights host_base_weights(const QwenConfig& c, std::uint64_t seed);

}  // namespace gpuaccept::fsdp
