// The random base as a pure function of (seed, tensor, element): the layers, embedding and head
// that N ranks' shards gather into are the same bits for every N, and the same the host builds
// for the CPU reference; values have the intended distribution and are exactly bf16.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "fsdp-lora/base_init.h"
#include "fsdp-lora/shard_plan.h"

using namespace gpuaccept::fsdp;

namespace {

// What an all-gather of every rank's shard of `layer` assembles (the padded flat layer).
std::vector<std::uint16_t> gathered_layer(const QwenConfig& c, int world, int layer, std::uint64_t seed) {
  const ShardPlan plan = make_shard_plan(c, world);
  std::vector<std::uint16_t> out;
  for (int r = 0; r < world; ++r) {
    const auto shard = host_layer_shard(plan, r, layer, seed);
    out.insert(out.end(), shard.begin(), shard.end());
  }
  return out;
}

std::vector<std::uint16_t> gathered_vocab(const QwenConfig& c, int world, std::uint64_t tensor, std::uint64_t seed) {
  const ShardPlan plan = make_shard_plan(c, world);
  std::vector<std::uint16_t> out;
  for (int r = 0; r < world; ++r) {
    const auto shard = host_vocab_shard(plan, r, tensor, seed);
    out.insert(out.end(), shard.begin(), shard.end());
  }
  out.resize(static_cast<std::size_t>(c.vocab) * static_cast<std::size_t>(c.hidden));  // the real rows
  return out;
}

}  // namespace

TEST_CASE("base_init: the gathered layer is the same bits for any number of ranks", "[fsdp][base_init]") {
  const QwenConfig mid{1000, 256, 3, 4, 2, 64, 512, 128, 1e-6, 1e6};
  for (const QwenConfig& c : {qwen_tiny, mid}) {
    const LayerLayout layout = make_layer_layout(c);
    for (int layer = 0; layer < c.layers; ++layer) {
      auto one = gathered_layer(c, 1, layer, 42);
      one.resize(layout.numel);
      for (int world : {2, 3, 5, 8}) {
        auto many = gathered_layer(c, world, layer, 42);
        // Past the layer's last tensor: padding, zero.
        for (std::size_t i = layout.numel; i < many.size(); ++i) REQUIRE(many[i] == 0);
        many.resize(layout.numel);
        REQUIRE(many == one);
      }
    }
    const auto e1 = gathered_vocab(c, 1, kEmbeddingTensor, 42), h1 = gathered_vocab(c, 1, kHeadTensor, 42);
    for (int world : {2, 3, 8}) {
      CHECK(gathered_vocab(c, world, kEmbeddingTensor, 42) == e1);
      CHECK(gathered_vocab(c, world, kHeadTensor, 42) == h1);
    }
    CHECK(e1 != h1);
  }
}

TEST_CASE("base_init: the host's base for the reference holds the gathered values", "[fsdp][base_init]") {
  const QwenConfig& c = qwen_tiny;
  const LayerLayout layout = make_layer_layout(c);
  const QwenBaseWeights base = host_base_weights(c, 7);
  for (int layer = 0; layer < c.layers; ++layer) {
    const auto flat = gathered_layer(c, 3, layer, 7);
    const QwenLayerWeights& w = base.layers[static_cast<std::size_t>(layer)];
    auto same = [&](const char* suffix, const std::vector<double>& v) {
      const TensorSlot& s = layout.find(suffix);
      REQUIRE(v.size() == s.numel);
      for (std::size_t i = 0; i < v.size(); ++i) REQUIRE(bf16_bits_to_double(flat[s.offset + i]) == v[i]);
    };
    same("input_layernorm.weight", w.w_in);
    same("self_attn.q_proj.weight", w.wq);
    same("self_attn.q_proj.bias", w.bq);
    same("self_attn.k_proj.bias", w.bk);
    same("self_attn.v_proj.weight", w.wv);
    same("self_attn.o_proj.weight", w.wo);
    same("post_attention_layernorm.weight", w.w_post);
    same("mlp.down_proj.weight", w.wd);
  }
  const auto embed = gathered_vocab(c, 2, kEmbeddingTensor, 7);
  for (std::size_t i = 0; i < embed.size(); ++i) REQUIRE(bf16_bits_to_double(embed[i]) == base.embed[i]);
  for (double v : base.w_final) CHECK(v == 1.0);
}

TEST_CASE("base_init: values are bf16, uniform with std 0.02, norms 1, and depend on seed and tensor",
          "[fsdp][base_init]") {
  double sum = 0, sum2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double v = bf16_bits_to_double(bf16_bits(base_init_value(1, kHeadTensor, static_cast<std::uint64_t>(i),
                                                                   matrix_half_width())));
    REQUIRE(std::abs(v) <= 0.0347);
    sum += v;
    sum2 += v * v;
  }
  CHECK(std::abs(sum / n) < 3e-4);
  CHECK(std::sqrt(sum2 / n) == Approx(0.02).epsilon(0.02));
  CHECK(base_init_value(1, 5, 0, 0.0f) == 1.0f);
  CHECK(base_init_value(1, 20, 3, 0.1f) != base_init_value(2, 20, 3, 0.1f));
  CHECK(base_init_value(1, 20, 3, 0.1f) != base_init_value(1, 21, 3, 0.1f));
  // Round to nearest even, as __float2bfloat16.
  CHECK(bf16_bits(1.0f) == 0x3f80);
  CHECK(bf16_bits(1.00390625f) == 0x3f80);      // halfway, to even
  CHECK(bf16_bits(1.01171875f) == 0x3f82);      // halfway, up to even
  CHECK(bf16_bits(-2.0f) == 0xc000);
}
