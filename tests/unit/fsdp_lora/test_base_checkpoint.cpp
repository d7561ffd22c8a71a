// The frozen base from a Hugging Face checkpoint (base_checkpoint.h): a checkpoint holding the
// random init's bits, in one file or several with an index, gives every rank, for 1 to 4
// ranks, exactly the shards the random init gives it (the GPU copies these buffers as they
// are); a checkpoint with a tensor missing, of another shape or of an integer dtype is refused
// naming the file and the tensor.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/error.h"
#include "../fresh_dir.h"
#include "fsdp-lora/base_checkpoint.h"
#include "fsdp-lora/base_init.h"
#include "train/safetensors_writer.h"

using namespace gpuaccept;
using namespace gpuaccept::fsdp;
namespace fs = std::filesystem;

namespace {
constexpr std::uint64_t kSeed = 77;

void check_every_rank_reads_its_random_shards(const train::SafetensorsCheckpoint& ck, const QwenConfig& model) {
  check_base_checkpoint(ck, model);
  for (int world = 1; world <= 4; ++world) {
    const ShardPlan plan = make_shard_plan(model, world);
    for (int rank = 0; rank < world; ++rank) {
      CAPTURE(world, rank);
      for (int layer = 0; layer < model.layers; ++layer) {
        std::vector<std::uint16_t> got(region_elems(plan, ShardRegion::layers), 0xffff);
        read_base_region(ck, plan, rank, ShardRegion::layers, layer, got.data());
        CHECK(got == host_layer_shard(plan, rank, layer, kSeed));
      }
      std::vector<std::uint16_t> vocab(region_elems(plan, ShardRegion::embedding), 0xffff);
      read_base_region(ck, plan, rank, ShardRegion::embedding, 0, vocab.data());
      CHECK(vocab == host_vocab_shard(plan, rank, kEmbeddingTensor, kSeed));
      read_base_region(ck, plan, rank, ShardRegion::head, 0, vocab.data());
      CHECK(vocab == host_vocab_shard(plan, rank, kHeadTensor, kSeed));
      std::vector<std::uint16_t> norm(region_elems(plan, ShardRegion::final_norm));
      read_base_region(ck, plan, rank, ShardRegion::final_norm, 0, norm.data());
      CHECK(norm == std::vector<std::uint16_t>(static_cast<std::size_t>(model.hidden), bf16_bits(1.0f)));
    }
  }
}
}  // namespace

TEST_CASE("a checkpoint of the random base gives every rank the random init's shards, bit for bit") {
  for (const int files : {1, 3}) {
    CAPTURE(files);
    const fs::path dir = testing::fresh_dir("fsdp-base-ckpt");
    write_random_base_checkpoint(dir, qwen_tiny, kSeed, files);
    CHECK(fs::exists(dir / (files == 1 ? "model.safetensors" : "model.safetensors.index.json")));
    const train::SafetensorsCheckpoint ck(dir);
    CHECK(ck.sharded() == (files > 1));
    check_every_rank_reads_its_random_shards(ck, qwen_tiny);
    fs::remove_all(dir);
  }
}

TEST_CASE("a deeper checkpoint serves a model of fewer layers: its first ones") {
  const fs::path dir = testing::fresh_dir("fsdp-base-ckpt-deep");
  write_random_base_checkpoint(dir, qwen_tiny, kSeed, 2);
  QwenConfig shallow = qwen_tiny;
  shallow.layers = 1;
  check_every_rank_reads_its_random_shards(train::SafetensorsCheckpoint(dir), shallow);
  fs::remove_all(dir);
}

TEST_CASE("a base checkpoint with a tensor missing, of another shape or dtype is refused naming file and tensor") {
  const fs::path dir = testing::fresh_dir("fsdp-base-ckpt-bad");
  write_random_base_checkpoint(dir, qwen_tiny, kSeed, 1);
  QwenConfig deeper = qwen_tiny;
  deeper.layers = qwen_tiny.layers + 1;
  CHECK_THROWS_AS(check_base_checkpoint(train::SafetensorsCheckpoint(dir), deeper), InputError);
  CHECK_THROWS_WITH(check_base_checkpoint(train::SafetensorsCheckpoint(dir), deeper),
                    Catch::Contains(fmt::format("model.layers.{}.", qwen_tiny.layers)));
  QwenConfig wider = qwen_tiny;
  wider.vocab = qwen_tiny.vocab + 8;
  CHECK_THROWS_WITH(check_base_checkpoint(train::SafetensorsCheckpoint(dir), wider),
                    Catch::Contains("model.safetensors") && Catch::Contains("model.embed_tokens.weight") &&
                        Catch::Contains("shape"));

  // The final norm stored as integers: no float to take it from.
  const fs::path odd = testing::fresh_dir("fsdp-base-ckpt-int");
  write_random_base_checkpoint(odd, qwen_tiny, kSeed, 1);
  {
    const train::SafetensorsCheckpoint ck(odd);
    std::vector<train::TensorToWrite> tensors;
    std::vector<std::vector<std::uint16_t>> data;
    data.reserve(ck.tensor_names().size());  // the pointers in `tensors` must stay valid
    const std::vector<std::int32_t> ints(static_cast<std::size_t>(qwen_tiny.hidden), 1);
    for (const std::string& name : ck.tensor_names()) {
      const train::TensorInfo& t = *ck.find(name);
      if (name == "model.norm.weight") {
        tensors.push_back({name, train::Dtype::i32, t.shape, ints.data()});
        continue;
      }
      std::uint64_t n = 1;
      for (const auto d : t.shape) n *= static_cast<std::uint64_t>(d);
      auto& v = data.emplace_back(n);
      ck.read_elements(name, 0, n, v.data());
      tensors.push_back({name, t.dtype, t.shape, v.data()});
    }
    train::write_safetensors(odd / "rewritten.safetensors", tensors, {});
  }
  fs::remove(odd / "model.safetensors");
  fs::rename(odd / "rewritten.safetensors", odd / "model.safetensors");
  CHECK_THROWS_WITH(check_base_checkpoint(train::SafetensorsCheckpoint(odd), qwen_tiny),
                    Catch::Contains("model.norm.weight") && Catch::Contains("I32"));
  fs::remove_all(dir);
  fs::remove_all(odd);
}
