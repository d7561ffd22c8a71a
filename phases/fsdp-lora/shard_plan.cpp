#include "fsdp-lora/shard_plan.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace gpuaccept::fsdp {

namespace {

std::uint64_t round_up(std::uint64_t n, std::uint64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

void check_rank(const ShardPlan& plan, int rank) {
  if (rank < 0 || rank >= plan.world_size)
    throw std::invalid_argument(fmt::format("shard plan: rank {} outside 0..{}", rank, plan.world_size - 1));
}

}  // namespace

const TensorSlot& LayerLayout::find(std::string_view suffix) const {
  for (const TensorSlot& t : tensors)
    if (t.name == suffix) return t;
  throw std::invalid_argument(fmt::format("layer layout: no tensor '{}'", suffix));
}

LayerLayout make_layer_layout(const QwenConfig& c) {
  validate(c);
  const std::int64_t C = c.hidden, I = c.intermediate, Q = std::int64_t{c.heads} * c.head_dim,
                     KV = std::int64_t{c.kv_heads} * c.head_dim;
  LayerLayout layout;
  auto add = [&layout](std::string name, std::vector<std::int64_t> shape) {
    std::uint64_t numel = 1;
    for (std::int64_t d : shape) numel *= static_cast<std::uint64_t>(d);
    const std::uint64_t offset = round_up(layout.numel, kTensorAlignElems);
    layout.tensors.push_back({std::move(name), std::move(shape), offset, numel});
    layout.numel = offset + numel;
  };
  add("input_layernorm.weight", {C});
  add("self_attn.q_proj.weight", {Q, C});
  add("self_attn.q_proj.bias", {Q});
  add("self_attn.k_proj.weight", {KV, C});
  add("self_attn.k_proj.bias", {KV});
  add("self_attn.v_proj.weight", {KV, C});
  add("self_attn.v_proj.bias", {KV});
  add("self_attn.o_proj.weight", {C, Q});
  add("post_attention_layernorm.weight", {C});
  add("mlp.gate_proj.weight", {I, C});
  add("mlp.up_proj.weight", {I, C});
  add("mlp.down_proj.weight", {C, I});
  // The layer ends aligned too, so that layers laid end to end (an unsharded copy) stay aligned.
  layout.numel = round_up(layout.numel, kTensorAlignElems);
  return layout;
}

ShardPlan make_shard_plan(const QwenConfig& c, int world_size) {
  if (world_size < 1) throw std::invalid_argument(fmt::format("shard plan: world size {} must be at least 1", world_size));
  ShardPlan p;
  p.model = c;
  p.world_size = world_size;
  p.layer = make_layer_layout(c);
  const std::uint64_t world = static_cast<std::uint64_t>(world_size);
  // Each shard a multiple of 64 elements too, so every rank's slot in the gather buffer starts aligned.
  p.layer_padded_elems = round_up(p.layer.numel, world * kTensorAlignElems);
  p.layer_shard_elems = p.layer_padded_elems / world;
  const std::int64_t per_rank = (std::int64_t{c.vocab} + world_size - 1) / world_size;
  p.vocab_rows_per_rank = static_cast<std::int64_t>(round_up(static_cast<std::uint64_t>(per_rank), kVocabRowAlign));
  return p;
}

std::uint64_t ShardPlan::layer_shard_begin(int rank) const {
  check_rank(*this, rank);
  return static_cast<std::uint64_t>(rank) * layer_shard_elems;
}

RowRange ShardPlan::vocab_rows(int rank) const {
  check_rank(*this, rank);
  const std::int64_t V = model.vocab;
  return {std::min(V, rank * vocab_rows_per_rank), std::min(V, (rank + 1) * vocab_rows_per_rank)};
}

std::uint64_t ShardPlan::layer_shard_bytes() const { return layer_shard_elems * kBf16Bytes; }
std::uint64_t ShardPlan::layers_shard_bytes() const { return static_cast<std::uint64_t>(model.layers) * layer_shard_bytes(); }
std::uint64_t ShardPlan::vocab_shard_bytes() const {
  return static_cast<std::uint64_t>(vocab_rows_per_rank) * static_cast<std::uint64_t>(model.hidden) * kBf16Bytes;
}
std::uint64_t ShardPlan::final_norm_bytes() const { return static_cast<std::uint64_t>(model.hidden) * kBf16Bytes; }
std::uint64_t ShardPlan::rank_base_bytes() const {
  return layers_shard_bytes() + 2 * vocab_shard_bytes() + final_norm_bytes();
}
std::uint64_t ShardPlan::layer_gather_bytes() const { return layer_padded_elems * kBf16Bytes; }
std::uint64_t ShardPlan::vocab_gather_bytes() const { return static_cast<std::uint64_t>(world_size) * vocab_shard_bytes(); }

const char* shard_region_name(ShardRegion r) {
  switch (r) {
    case ShardRegion::layers: return "layers";
    case ShardRegion::embedding: return "embedding";
    case ShardRegion::head: return "head";
    case ShardRegion::final_norm: return "final_norm";
  }
  throw std::invalid_argument("shard_region_name: not a ShardRegion");
}

std::string layer_tensor_name(int layer, std::string_view suffix) { return fmt::format("model.layers.{}.{}", layer, suffix); }

std::vector<CheckpointPiece> layer_pieces(const ShardPlan& plan, int rank) {
  const std::uint64_t shard_begin = plan.layer_shard_begin(rank);
  const std::uint64_t shard_end = shard_begin + plan.layer_shard_elems;
  std::vector<CheckpointPiece> pieces;
  for (const TensorSlot& t : plan.layer.tensors) {
    // The tensor's part inside [shard_begin, shard_end) of the flat layer, if any.
    const std::uint64_t begin = std::max(t.offset, shard_begin);
    const std::uint64_t end = std::min(t.offset + t.numel, shard_end);
    if (begin >= end) continue;
    pieces.push_back({t.name, begin - t.offset, end - begin, ShardRegion::layers, begin - shard_begin});
  }
  return pieces;
}

std::vector<CheckpointPiece> checkpoint_pieces(const ShardPlan& plan, int rank) {
  const std::vector<CheckpointPiece> one_layer = layer_pieces(plan, rank);
  std::vector<CheckpointPiece> pieces;
  pieces.reserve(one_layer.size() * static_cast<std::size_t>(plan.model.layers) + 3);
  for (int layer = 0; layer < plan.model.layers; ++layer)
    for (const CheckpointPiece& p : one_layer)
      pieces.push_back({layer_tensor_name(layer, p.tensor), p.tensor_begin, p.numel, ShardRegion::layers,
                        static_cast<std::uint64_t>(layer) * plan.layer_shard_elems + p.dest_offset});
  const RowRange rows = plan.vocab_rows(rank);
  const std::uint64_t C = static_cast<std::uint64_t>(plan.model.hidden);
  if (rows.rows() > 0) {
    const std::uint64_t begin = static_cast<std::uint64_t>(rows.begin) * C, numel = static_cast<std::uint64_t>(rows.rows()) * C;
    pieces.push_back({kEmbeddingName, begin, numel, ShardRegion::embedding, 0});
    pieces.push_back({kHeadName, begin, numel, ShardRegion::head, 0});
  }
  pieces.push_back({kFinalNormName, 0, C, ShardRegion::final_norm, 0});
  return pieces;
}

}  // namespace gpuaccept::fsdp
