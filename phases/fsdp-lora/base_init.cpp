#include "fsdp-lora/base_init.h"

#include <stdexcept>
#include <string>

namespace gpuaccept::fsdp {

namespace {

std::size_t slot_index(const LayerLayout& layout, const std::string& name) {
  for (std::size_t i = 0; i < layout.tensors.size(); ++i)
    if (layout.tensors[i].name == name) return i;
  throw std::logic_error("base_init: no tensor " + name + " in the layer layout");
}

void fill(std::vector<std::uint16_t>& out, const std::vector<InitPiece>& pieces, std::uint64_t seed) {
  for (const InitPiece& p : pieces)
    for (std::uint64_t i = 0; i < p.numel; ++i)
      out[p.dest_offset + i] = bf16_bits(base_init_value(seed, p.tensor, p.first + i, p.half_width));
}

std::vector<double> tensor_values(std::uint64_t seed, std::uint64_t tensor, std::uint64_t numel, float half_width) {
  std::vector<double> v(numel);
  for (std::uint64_t i = 0; i < numel; ++i)
    v[i] = bf16_bits_to_double(bf16_bits(base_init_value(seed, tensor, i, half_width)));
  return v;
}

}  // namespace

float layer_tensor_half_width(const TensorSlot& slot) {
  return slot.name.find("layernorm") != std::string::npos ? 0.0f : matrix_half_width();
}

std::uint64_t layer_tensor_id(int layer, std::size_t slot_index) {
  return kLayerTensorBase + static_cast<std::uint64_t>(layer) * kLayerTensorStride + slot_index;
}

std::vector<InitPiece> layer_init_pieces(const ShardPlan& plan, int rank, int layer) {
  std::vector<InitPiece> out;
  for (const CheckpointPiece& p : layer_pieces(plan, rank)) {
    const std::size_t s = slot_index(plan.layer, p.tensor);
    out.push_back({layer_tensor_id(layer, s), p.tensor_begin, p.numel, p.dest_offset,
                   layer_tensor_half_width(plan.layer.tensors[s])});
  }
  return out;
}

std::vector<InitPiece> vocab_init_pieces(const ShardPlan& plan, int rank, std::uint64_t tensor) {
  const RowRange rows = plan.vocab_rows(rank);
  if (rows.rows() <= 0) return {};
  const std::uint64_t C = static_cast<std::uint64_t>(plan.model.hidden);
  return {{tensor, static_cast<std::uint64_t>(rows.begin) * C, static_cast<std::uint64_t>(rows.rows()) * C, 0,
           matrix_half_width()}};
}

std::vector<std::uint16_t> host_layer_shard(const ShardPlan& plan, int rank, int layer, std::uint64_t seed) {
  std::vector<std::uint16_t> out(plan.layer_shard_elems, 0);
  fill(out, layer_init_pieces(plan, rank, layer), seed);
  return out;
}

std::vector<std::uint16_t> host_vocab_shard(const ShardPlan& plan, int rank, std::uint64_t tensor, std::uint64_t seed) {
  std::vector<std::uint16_t> out(static_cast<std::size_t>(plan.vocab_rows_per_rank) * static_cast<std::size_t>(plan.model.hidden), 0);
  fill(out, vocab_init_pieces(plan, rank, tensor), seed);
  return out;
}

QwenBaseWeights host_base_weights(const QwenConfig& c, std::uint64_t seed) {
  validate(c);
  const LayerLayout layout = make_layer_layout(c);
  const std::uint64_t V = static_cast<std::uint64_t>(c.vocab), C = static_cast<std::uint64_t>(c.hidden);
  QwenBaseWeights b;
  b.embed = tensor_values(seed, kEmbeddingTensor, V * C, matrix_half_width());
  b.head = tensor_values(seed, kHeadTensor, V * C, matrix_half_width());
  b.w_final = tensor_values(seed, kFinalNormTensor, C, 0.0f);
  for (int l = 0; l < c.layers; ++l) {
    QwenLayerWeights w;
    auto get = [&](const char* suffix) {
      const std::size_t s = slot_index(layout, suffix);
      const TensorSlot& slot = layout.tensors[s];
      return tensor_values(seed, layer_tensor_id(l, s), slot.numel, layer_tensor_half_width(slot));
    };
    w.w_in = get("input_layernorm.weight");
    w.wq = get("self_attn.q_proj.weight");
    w.bq = get("self_attn.q_proj.bias");
    w.wk = get("self_attn.k_proj.weight");
    w.bk = get("self_attn.k_proj.bias");
    w.wv = get("self_attn.v_proj.weight");
    w.bv = get("self_attn.v_proj.bias");
    w.wo = get("self_attn.o_proj.weight");
    w.w_post = get("post_attention_layernorm.weight");
    w.wg = get("mlp.gate_proj.weight");
    w.wu = get("mlp.up_proj.weight");
    w.wd = get("mlp.down_proj.weight");
    b.layers.push_back(std::move(w));
  }
  return b;
}

}  // namespace gpuaccept::fsdp
