// Where every frozen base weight lives when the base is sharded FSDP-style across ranks.
//
// A decoder layer's twelve tensors sit in one flat bf16 buffer (LayerLayout), each starting at
// a multiple of 64 elements (128 bytes) so that the matmuls read aligned pointers once the layer
// is gathered. That flat layer, padded to a multiple of world_size x 64 elements, is cut into
// world_size equal contiguous shards: rank r holds [r x shard, (r + 1) x shard) of every layer,
// and an all-gather of the shards rebuilds the layer in the gather buffer. A tensor may straddle
// two or more shards; it is then split across ranks.
// The embedding and the head (V, C) are sharded by rows instead (rows_per_rank each, the last
// ranks possibly holding fewer or none), and the final norm (C) is replicated.
// checkpoint_pieces() lists what a rank must read from a checkpoint to fill its shards, so that
// each rank reads only its own slices of the safetensors files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fsdp-lora/qwen_config.h"

namespace gpuaccept::fsdp {

// Tensors in the flat layer start at multiples of this many elements: 128 bytes of bf16, what
// cuBLASLt and vectorised kernels want of an operand's address.
inline constexpr std::uint64_t kTensorAlignElems = 64;
// Rows of the embedding and head per rank are a multiple of this, so that the head's matmul over
// one rank's rows has an M that suits bf16 tensor cores.
inline constexpr std::int64_t kVocabRowAlign = 8;
inline constexpr std::uint64_t kBf16Bytes = 2;

struct TensorSlot {
  std::string name;                  // Hugging Face name suffix, e.g. "self_attn.q_proj.weight"
  std::vector<std::int64_t> shape;   // as Hugging Face stores it: a projection's weight is (out, in)
  std::uint64_t offset;              // elements from the layer's flat start; a multiple of kTensorAlignElems
  std::uint64_t numel;               // elements
};

// One decoder layer's frozen base tensors, in a fixed order: input_layernorm.weight,
// self_attn.{q_proj.weight, q_proj.bias, k_proj.weight, k_proj.bias, v_proj.weight, v_proj.bias,
// o_proj.weight}, post_attention_layernorm.weight, mlp.{gate_proj, up_proj, down_proj}.weight.
struct LayerLayout {
  std::vector<TensorSlot> tensors;
  std::uint64_t numel = 0;  // end of the last tensor rounded up to kTensorAlignElems (elements)

  // Throws std::invalid_argument naming a suffix the layer does not have.
  const TensorSlot& find(std::string_view suffix) const;
};
LayerLayout make_layer_layout(const QwenConfig& c);

struct RowRange {
  std::int64_t begin = 0, end = 0;  // rows [begin, end); empty when begin == end
  std::int64_t rows() const { return end - begin; }
};

struct ShardPlan {
  QwenConfig model{};
  int world_size = 1;
  LayerLayout layer;
  std::uint64_t layer_padded_elems = 0;  // layer.numel rounded up to world_size x kTensorAlignElems
  std::uint64_t layer_shard_elems = 0;   // layer_padded_elems / world_size: every layer's shard, per rank
  std::int64_t vocab_rows_per_rank = 0;  // ceil(V / world_size) rounded up to kVocabRowAlign

  // First element of the flat layer that `rank` holds; it holds layer_shard_elems from there.
  std::uint64_t layer_shard_begin(int rank) const;
  // The embedding's (and the head's) rows `rank` holds: possibly fewer than vocab_rows_per_rank,
  // or none, for the last ranks.
  RowRange vocab_rows(int rank) const;

  // Bytes (bf16) per rank. The embedding and head shards are padded to vocab_rows_per_rank rows
  // in memory, so every rank's shard has the same size (an all-gather needs that).
  std::uint64_t layer_shard_bytes() const;   // one layer's shard
  std::uint64_t layers_shard_bytes() const;  // all layers' shards
  std::uint64_t vocab_shard_bytes() const;   // the embedding's shard, or the head's
  std::uint64_t final_norm_bytes() const;    // replicated on every rank
  std::uint64_t rank_base_bytes() const;     // all of the above: layers, embedding, head, final norm
  // Gather buffers: one full padded layer; the full embedding or head (world x rows_per_rank rows).
  std::uint64_t layer_gather_bytes() const;
  std::uint64_t vocab_gather_bytes() const;
};

// Throws std::invalid_argument for world_size < 1 or an invalid config.
ShardPlan make_shard_plan(const QwenConfig& c, int world_size);

// Which of a rank's buffers a checkpoint piece goes to.
enum class ShardRegion {
  layers,      // every layer's shard, layer after layer: layer i's starts at i x layer_shard_elems
  embedding,   // vocab_rows_per_rank x C
  head,        // vocab_rows_per_rank x C
  final_norm,  // C, replicated
};
const char* shard_region_name(ShardRegion r);

// The Hugging Face Qwen2 names of the base's tensors, as a checkpoint stores them.
inline constexpr const char* kEmbeddingName = "model.embed_tokens.weight";
inline constexpr const char* kHeadName = "lm_head.weight";
inline constexpr const char* kFinalNormName = "model.norm.weight";
// "model.layers.3." + a LayerLayout suffix.
std::string layer_tensor_name(int layer, std::string_view suffix);

// A contiguous run of one checkpoint tensor that one rank must hold.
struct CheckpointPiece {
  std::string tensor;            // the Hugging Face name ("model.layers.3.self_attn.q_proj.weight"),
                                 // or for layer_pieces() the layer's suffix ("self_attn.q_proj.weight")
  std::uint64_t tensor_begin;    // first element, row-major within the tensor
  std::uint64_t numel;           // elements
  ShardRegion region;
  std::uint64_t dest_offset;     // elements from the start of the rank's buffer for `region`
};

// The pieces of one layer that `rank` holds, named by suffix; dest_offset is within the layer's
// shard. The same for every layer.
std::vector<CheckpointPiece> layer_pieces(const ShardPlan& plan, int rank);
// Everything `rank` reads from a checkpoint: every layer's pieces (full names, dest_offset within
// the layers region), its embedding and head rows, and the final norm.
std::vector<CheckpointPiece> checkpoint_pieces(const ShardPlan& plan, int rank);

}  // namespace gpuaccept::fsdp
