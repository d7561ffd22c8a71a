#include "fsdp-lora/base_checkpoint.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "fsdp-lora/base_init.h"
#include "train/safetensors_writer.h"

namespace gpuaccept::fsdp {

namespace {

std::vector<std::int64_t> vocab_shape(const QwenConfig& m) { return {m.vocab, m.hidden}; }

// The checkpoint's tensors, in the order a Hugging Face Qwen2 lists them: name, shape, the
// random init's tensor id and half width.
struct NamedTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::uint64_t id;
  float half_width;
};
std::vector<NamedTensor> model_tensors(const QwenConfig& m) {
  const LayerLayout layout = make_layer_layout(m);
  std::vector<NamedTensor> out{{kEmbeddingName, vocab_shape(m), kEmbeddingTensor, matrix_half_width()}};
  for (int l = 0; l < m.layers; ++l)
    for (std::size_t i = 0; i < layout.tensors.size(); ++i)
      out.push_back({layer_tensor_name(l, layout.tensors[i].name), layout.tensors[i].shape, layer_tensor_id(l, i),
                     layer_tensor_half_width(layout.tensors[i])});
  out.push_back({kFinalNormName, {m.hidden}, kFinalNormTensor, 0.0f});
  out.push_back({kHeadName, vocab_shape(m), kHeadTensor, matrix_half_width()});
  return out;
}

}  // namespace

void check_base_checkpoint(const train::SafetensorsCheckpoint& checkpoint, const QwenConfig& model) {
  for (const NamedTensor& t : model_tensors(model)) checkpoint.require_bf16_source(t.name, t.shape);
}

std::uint64_t region_elems(const ShardPlan& plan, ShardRegion region) {
  switch (region) {
    case ShardRegion::layers: return plan.layer_shard_elems;
    case ShardRegion::embedding:
    case ShardRegion::head: return static_cast<std::uint64_t>(plan.vocab_rows_per_rank) * static_cast<std::uint64_t>(plan.model.hidden);
    case ShardRegion::final_norm: return static_cast<std::uint64_t>(plan.model.hidden);
  }
  throw std::invalid_argument("region_elems: not a ShardRegion");
}

void read_base_region(const train::SafetensorsCheckpoint& checkpoint, const ShardPlan& plan, int rank,
                      ShardRegion region, int layer, std::uint16_t* dst) {
  std::fill(dst, dst + region_elems(plan, region), std::uint16_t{0});
  if (region == ShardRegion::layers) {
    for (const CheckpointPiece& p : layer_pieces(plan, rank))
      checkpoint.read_bf16(layer_tensor_name(layer, p.tensor), p.tensor_begin, p.numel, dst + p.dest_offset);
    return;
  }
  for (const CheckpointPiece& p : checkpoint_pieces(plan, rank))
    if (p.region == region) checkpoint.read_bf16(p.tensor, p.tensor_begin, p.numel, dst + p.dest_offset);
}

void write_random_base_checkpoint(const std::filesystem::path& dir, const QwenConfig& model, std::uint64_t seed,
                                  int files) {
  if (files < 1) throw std::invalid_argument("write_random_base_checkpoint: files < 1");
  std::filesystem::create_directories(dir);
  const std::vector<NamedTensor> tensors = model_tensors(model);
  // Tensors go to the files in order, about the same count each, every file at least one.
  const std::size_t per_file = (tensors.size() + static_cast<std::size_t>(files) - 1) / static_cast<std::size_t>(files);
  files = static_cast<int>((tensors.size() + per_file - 1) / per_file);
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  for (int f = 0; f < files; ++f) {
    const std::size_t begin = std::min(tensors.size(), static_cast<std::size_t>(f) * per_file);
    const std::size_t end = std::min(tensors.size(), begin + per_file);
    const std::string name = files == 1 ? "model.safetensors" : fmt::format("model-{:05d}-of-{:05d}.safetensors", f + 1, files);
    std::vector<std::vector<std::uint16_t>> data;
    std::vector<train::TensorToWrite> to_write;
    data.reserve(end - begin);
    for (std::size_t i = begin; i < end; ++i) {
      const NamedTensor& t = tensors[i];
      std::uint64_t numel = 1;
      for (const auto d : t.shape) numel *= static_cast<std::uint64_t>(d);
      std::vector<std::uint16_t>& v = data.emplace_back(numel);
      for (std::uint64_t e = 0; e < numel; ++e) v[e] = bf16_bits(base_init_value(seed, t.id, e, t.half_width));
      to_write.push_back({t.name, train::Dtype::bf16, t.shape, v.data()});
      weight_map[t.name] = name;
    }
    train::write_safetensors(dir / name, to_write, {{"format", "pt"}});
  }
  if (files > 1) {
    std::ofstream index(dir / "model.safetensors.index.json");
    index << nlohmann::ordered_json{{"metadata", {{"generated_by", "gpuaccept write_random_base_checkpoint"}}},
                                    {"weight_map", weight_map}}
                 .dump(1)
          << '\n';
    if (!index) throw InputError(fmt::format("{}: could not write the index", (dir / "model.safetensors.index.json").string()));
  }
}

}  // namespace gpuaccept::fsdp
