// The frozen base from a local Hugging Face checkpoint directory (fsdp_lora.checkpoint_dir)
// instead of random weights: model.safetensors, or model.safetensors.index.json and its shards
// (train/safetensors_reader.h). Each rank reads only its own pieces (shard_plan.h's
// checkpoint_pieces) into buffers laid out exactly as its device shards, so a region can be
// copied to the GPU as it is (gpu/fsdp_weights.h, init_from_checkpoint). CPU only.
//
// Only the tensors' names, shapes and dtypes are checked against the preset (the first
// `layers` decoder layers of a deeper checkpoint are accepted); hyperparameters such as RoPE's
// theta come from the preset, not from the checkpoint's config.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "fsdp-lora/qwen_config.h"
#include "fsdp-lora/shard_plan.h"
#include "train/safetensors_reader.h"

namespace gpuaccept::fsdp {

// Every tensor the model reads is in the checkpoint with the preset's shape, as BF16, F16 or
// F32. Throws InputError naming the file and the tensor ("…/model-00002-of-00004.safetensors:
// tensor 'model.layers.3.mlp.up_proj.weight': shape: expected [18944, 3584], found …").
void check_base_checkpoint(const train::SafetensorsCheckpoint& checkpoint, const QwenConfig& model);

// One of a rank's base buffers, read from the checkpoint: `dst` holds as many elements as the
// device buffer (region_elems) and is zeroed first, so padding reads 0 as on the GPU. For
// ShardRegion::layers, `layer`'s shard (layer_shard_elems); otherwise `layer` is ignored.
std::uint64_t region_elems(const ShardPlan& plan, ShardRegion region);
void read_base_region(const train::SafetensorsCheckpoint& checkpoint, const ShardPlan& plan, int rank,
                      ShardRegion region, int layer, std::uint16_t* dst);

// Writes the random base of base_init.h (seed) as a Hugging Face checkpoint: `files` shards and
// model.safetensors.index.json (one file: model.safetensors alone). Its tensors hold the very
// bits the GPU's random init gives, so a run from it must train exactly as a run from the seed
// (tests/gpu/fsdp_base_paths.sh); the unit tests read it back piece by piece.
void write_random_base_checkpoint(const std::filesystem::path& dir, const QwenConfig& model, std::uint64_t seed,
                                  int files);

}  // namespace gpuaccept::fsdp
