// The sharding plan: every base element owned by exactly one rank at every world size, tensors
// aligned in the flat layer, and the checkpoint pieces covering each tensor exactly once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "fsdp-lora/shard_plan.h"

using namespace gpuaccept::fsdp;

namespace {

std::uint64_t numel_of(const std::vector<std::int64_t>& shape) {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

// A piece as the test sees it: where it comes from and where it lands, for one rank.
struct Landing {
  std::uint64_t tensor_begin, numel;
  int rank;
  std::uint64_t dest_offset;
};

// The pieces of every rank, grouped by tensor name and sorted by their start in the tensor.
std::map<std::string, std::vector<Landing>> pieces_by_tensor(const ShardPlan& plan) {
  std::map<std::string, std::vector<Landing>> by_tensor;
  for (int r = 0; r < plan.world_size; ++r)
    for (const CheckpointPiece& p : checkpoint_pieces(plan, r)) by_tensor[p.tensor].push_back({p.tensor_begin, p.numel, r, p.dest_offset});
  for (auto& [name, landings] : by_tensor)
    std::sort(landings.begin(), landings.end(), [](const Landing& a, const Landing& b) {
      return a.tensor_begin != b.tensor_begin ? a.tensor_begin < b.tensor_begin : a.rank < b.rank;
    });
  return by_tensor;
}

}  // namespace

TEST_CASE("the layer layout: HF names and shapes, in order, each tensor 64-element aligned", "[fsdp][shard]") {
  const LayerLayout layout = make_layer_layout(qwen2_7b);
  const std::vector<std::string> names{"input_layernorm.weight",  "self_attn.q_proj.weight",
                                       "self_attn.q_proj.bias",   "self_attn.k_proj.weight",
                                       "self_attn.k_proj.bias",   "self_attn.v_proj.weight",
                                       "self_attn.v_proj.bias",   "self_attn.o_proj.weight",
                                       "post_attention_layernorm.weight", "mlp.gate_proj.weight",
                                       "mlp.up_proj.weight",      "mlp.down_proj.weight"};
  REQUIRE(layout.tensors.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) CHECK(layout.tensors[i].name == names[i]);
  CHECK(layout.find("self_attn.q_proj.weight").shape == std::vector<std::int64_t>{3584, 3584});
  CHECK(layout.find("self_attn.k_proj.weight").shape == std::vector<std::int64_t>{512, 3584});
  CHECK(layout.find("self_attn.k_proj.bias").shape == std::vector<std::int64_t>{512});
  CHECK(layout.find("self_attn.o_proj.weight").shape == std::vector<std::int64_t>{3584, 3584});
  CHECK(layout.find("mlp.gate_proj.weight").shape == std::vector<std::int64_t>{18944, 3584});
  CHECK(layout.find("mlp.down_proj.weight").shape == std::vector<std::int64_t>{3584, 18944});
  CHECK_THROWS_WITH(layout.find("self_attn.o_proj.bias"), Catch::Contains("o_proj.bias"));
  // Every Qwen2-7B tensor is already a multiple of 64 elements: no alignment gaps at all.
  CHECK(layout.numel == layer_parameter_count(qwen2_7b));

  for (const QwenConfig& c : {qwen_tiny, qwen2_0_5b, qwen2_7b}) {
    const LayerLayout l = make_layer_layout(c);
    std::uint64_t sum = 0, previous_end = 0;
    for (const TensorSlot& t : l.tensors) {
      INFO(t.name);
      CHECK(t.offset % 64 == 0);
      CHECK(t.numel == numel_of(t.shape));
      CHECK(t.offset >= previous_end);           // no overlap, in order
      CHECK(t.offset - previous_end < 64);       // and no gap beyond the alignment
      previous_end = t.offset + t.numel;
      sum += t.numel;
    }
    CHECK(sum == layer_parameter_count(c));
    CHECK(l.numel >= previous_end);
    CHECK(l.numel % 64 == 0);
  }
  // The tiny model's small tensors do get gaps: input_layernorm (16 elements) is followed at 64.
  CHECK(make_layer_layout(qwen_tiny).find("self_attn.q_proj.weight").offset == 64);
  CHECK(make_layer_layout(qwen_tiny).numel == 2240);
}

TEST_CASE("the flat layer is padded to world x 64 and cut into equal shards", "[fsdp][shard]") {
  // Qwen2-7B: 233,057,792 elements = 455,191 x 512, so 8 ranks need no padding; 3 ranks do.
  const ShardPlan eight = make_shard_plan(qwen2_7b, 8);
  CHECK(eight.layer_padded_elems == 233'057'792);
  CHECK(eight.layer_shard_elems == 29'132'224);
  const ShardPlan three = make_shard_plan(qwen2_7b, 3);
  CHECK(three.layer_padded_elems == 233'057'856);  // next multiple of 192
  CHECK(three.layer_shard_elems == 77'685'952);
  for (const QwenConfig& c : {qwen_tiny, qwen2_0_5b, qwen2_7b})
    for (int world = 1; world <= 8; ++world) {
      const ShardPlan p = make_shard_plan(c, world);
      INFO("world " << world << " hidden " << c.hidden);
      CHECK(p.layer_padded_elems % (64ull * world) == 0);
      CHECK(p.layer_padded_elems >= p.layer.numel);
      CHECK(p.layer_padded_elems - p.layer.numel < 64ull * world);  // the least padding that works
      CHECK(p.layer_shard_elems * world == p.layer_padded_elems);
      CHECK(p.layer_shard_elems % 64 == 0);
      for (int r = 0; r < world; ++r) CHECK(p.layer_shard_begin(r) == r * p.layer_shard_elems);
    }
  CHECK_THROWS_AS(make_shard_plan(qwen2_7b, 0), std::invalid_argument);
  CHECK_THROWS_AS(eight.layer_shard_begin(8), std::invalid_argument);
  CHECK_THROWS_AS(eight.vocab_rows(-1), std::invalid_argument);
}

TEST_CASE("embedding and head rows: multiples of 8 per rank, every row owned once", "[fsdp][shard]") {
  const ShardPlan eight = make_shard_plan(qwen2_7b, 8);
  CHECK(eight.vocab_rows_per_rank == 19'008);  // 152064 / 8 exactly
  const ShardPlan seven = make_shard_plan(qwen2_7b, 7);
  CHECK(seven.vocab_rows_per_rank == 21'728);  // ceil(152064 / 7) = 21724, rounded up to 8
  CHECK(seven.vocab_rows(6).begin == 130'368);
  CHECK(seven.vocab_rows(6).rows() == 21'696);
  // Tiny: 13 rows over 3 ranks = 8 per rank: ranks 0 and 1 hold rows, rank 2 holds none.
  const ShardPlan tiny3 = make_shard_plan(qwen_tiny, 3);
  CHECK(tiny3.vocab_rows_per_rank == 8);
  CHECK(tiny3.vocab_rows(1).rows() == 5);
  CHECK(tiny3.vocab_rows(2).rows() == 0);
  CHECK(tiny3.vocab_shard_bytes() == 8 * 16 * 2);  // padded to rows_per_rank in memory all the same

  for (const QwenConfig& c : {qwen_tiny, qwen2_0_5b, qwen2_7b})
    for (int world = 1; world <= 8; ++world) {
      const ShardPlan p = make_shard_plan(c, world);
      INFO("world " << world << " vocab " << c.vocab);
      CHECK(p.vocab_rows_per_rank % 8 == 0);
      CHECK(p.vocab_rows_per_rank * world >= c.vocab);
      std::int64_t next = 0;
      for (int r = 0; r < world; ++r) {
        const RowRange rows = p.vocab_rows(r);
        CHECK(rows.begin == next);  // contiguous, no overlap, no hole
        CHECK(rows.rows() >= 0);
        CHECK(rows.rows() <= p.vocab_rows_per_rank);
        next = rows.end;
      }
      CHECK(next == c.vocab);
    }
}

TEST_CASE("every element of every layer tensor is owned by exactly one rank", "[fsdp][shard]") {
  for (const QwenConfig& c : {qwen_tiny, qwen2_7b})
    for (int world = 1; world <= 8; ++world) {
      const ShardPlan p = make_shard_plan(c, world);
      INFO("world " << world << " hidden " << c.hidden);
      // Count, per flat element of the layer, the ranks whose pieces write it (the tiny model
      // element by element; for Qwen2-7B the same through intervals below).
      if (c.hidden == qwen_tiny.hidden) {
        std::vector<int> owners(p.layer_padded_elems, 0);
        for (int r = 0; r < world; ++r)
          for (const CheckpointPiece& piece : layer_pieces(p, r))
            for (std::uint64_t e = 0; e < piece.numel; ++e) {
              const std::uint64_t flat = p.layer_shard_begin(r) + piece.dest_offset + e;
              ++owners[flat];
              // The piece's element is the tensor's element at the same place in the layout.
              CHECK(flat == p.layer.find(piece.tensor).offset + piece.tensor_begin + e);
            }
        for (const TensorSlot& t : p.layer.tensors)
          for (std::uint64_t e = 0; e < t.numel; ++e) REQUIRE(owners[t.offset + e] == 1);
        std::uint64_t owned = 0;
        for (int n : owners) owned += static_cast<std::uint64_t>(n);
        CHECK(owned == layer_parameter_count(c));  // padding and gaps are read by no one
      }
      for (int r = 0; r < world; ++r)
        for (const CheckpointPiece& piece : layer_pieces(p, r)) {
          CHECK(piece.region == ShardRegion::layers);
          CHECK(piece.numel > 0);
          CHECK(piece.dest_offset + piece.numel <= p.layer_shard_elems);  // inside the rank's shard
          const TensorSlot& t = p.layer.find(piece.tensor);
          CHECK(piece.tensor_begin + piece.numel <= t.numel);
          CHECK(p.layer_shard_begin(r) + piece.dest_offset == t.offset + piece.tensor_begin);
        }
    }
}

TEST_CASE("the checkpoint pieces cover each tensor exactly once, across world sizes", "[fsdp][shard]") {
  for (const QwenConfig& c : {qwen_tiny, qwen2_7b})
    for (int world = 1; world <= 8; ++world) {
      const ShardPlan p = make_shard_plan(c, world);
      INFO("world " << world << " hidden " << c.hidden);
      const auto by_tensor = pieces_by_tensor(p);
      // Every tensor of the checkpoint: 12 per layer, embedding, head, final norm.
      std::map<std::string, std::uint64_t> expected;
      for (int layer = 0; layer < c.layers; ++layer)
        for (const TensorSlot& t : p.layer.tensors) expected["model.layers." + std::to_string(layer) + "." + t.name] = t.numel;
      const std::uint64_t VC = std::uint64_t(c.vocab) * std::uint64_t(c.hidden);
      expected["model.embed_tokens.weight"] = VC;
      expected["lm_head.weight"] = VC;
      expected["model.norm.weight"] = std::uint64_t(c.hidden);
      REQUIRE(by_tensor.size() == expected.size());
      std::uint64_t total = 0;
      for (const auto& [name, numel] : expected) {
        INFO(name);
        REQUIRE(by_tensor.count(name) == 1);
        const auto& landings = by_tensor.at(name);
        if (name == "model.norm.weight") {
          // Replicated: every rank reads it whole.
          CHECK(landings.size() == std::size_t(world));
          for (const Landing& l : landings) CHECK((l.tensor_begin == 0 && l.numel == numel));
          total += numel;
          continue;
        }
        std::uint64_t next = 0;
        for (const Landing& l : landings) {
          CHECK(l.tensor_begin == next);  // no overlap, no hole
          next = l.tensor_begin + l.numel;
        }
        CHECK(next == numel);
        total += numel;
      }
      CHECK(total == base_parameter_count(c));
    }
}

TEST_CASE("pieces land inside each rank's buffers, where the all-gather expects them", "[fsdp][shard]") {
  const ShardPlan p = make_shard_plan(qwen2_7b, 8);
  // At 8 GPUs a shard is 29,132,224 elements, and each MLP matrix (67,895,296) is longer than
  // that: tensors straddle shards and are split across ranks.
  int split_tensors = 0;
  for (const TensorSlot& t : p.layer.tensors) {
    const std::uint64_t first_rank = t.offset / p.layer_shard_elems, last_rank = (t.offset + t.numel - 1) / p.layer_shard_elems;
    if (first_rank != last_rank) ++split_tensors;
  }
  CHECK(split_tensors > 0);

  const std::uint64_t C = 3584;
  for (int r = 0; r < 8; ++r) {
    const auto pieces = checkpoint_pieces(p, r);
    for (const CheckpointPiece& piece : pieces) {
      INFO(piece.tensor << " rank " << r);
      switch (piece.region) {
        case ShardRegion::layers:
          CHECK(piece.dest_offset + piece.numel <= 28 * p.layer_shard_elems);
          // Never across the boundary between two layers' shards.
          CHECK(piece.dest_offset / p.layer_shard_elems == (piece.dest_offset + piece.numel - 1) / p.layer_shard_elems);
          break;
        case ShardRegion::embedding:
        case ShardRegion::head:
          CHECK(piece.dest_offset == 0);
          CHECK(piece.tensor_begin == std::uint64_t(r) * 19'008 * C);
          CHECK(piece.numel == 19'008 * C);
          break;
        case ShardRegion::final_norm:
          CHECK(piece.numel == C);
          break;
      }
    }
    // Layer 5's pieces are layer 0's, shifted by 5 shards.
    const auto layer0 = layer_pieces(p, r);
    std::size_t found = 0;
    for (const CheckpointPiece& piece : pieces)
      if (piece.tensor.rfind("model.layers.5.", 0) == 0) {
        const CheckpointPiece& same = layer0.at(found++);
        CHECK(piece.tensor == "model.layers.5." + same.tensor);
        CHECK(piece.tensor_begin == same.tensor_begin);
        CHECK(piece.dest_offset == 5 * p.layer_shard_elems + same.dest_offset);
      }
    CHECK(found == layer0.size());
  }
  CHECK(std::string(shard_region_name(ShardRegion::head)) == "head");
}

TEST_CASE("bytes per rank: layers / N plus the embedding and head shards", "[fsdp][shard]") {
  const ShardPlan one = make_shard_plan(qwen2_7b, 1);
  // One GPU holds the whole base: 2 bytes x 7,615,616,512 = 15.23 GB.
  CHECK(one.rank_base_bytes() == 2 * base_parameter_count(qwen2_7b));
  CHECK(one.layer_gather_bytes() == 2 * 233'057'792ull);
  CHECK(one.vocab_gather_bytes() == 2 * 152'064ull * 3584);
  const ShardPlan eight = make_shard_plan(qwen2_7b, 8);
  CHECK(eight.layer_shard_bytes() == 2 * 29'132'224ull);
  CHECK(eight.layers_shard_bytes() == 28 * eight.layer_shard_bytes());
  CHECK(eight.vocab_shard_bytes() == 2 * 19'008ull * 3584);
  CHECK(eight.rank_base_bytes() * 8 == one.rank_base_bytes() + 7 * one.final_norm_bytes());  // norm replicated
  CHECK(eight.layer_gather_bytes() == one.layer_gather_bytes());
  for (int world = 1; world <= 8; ++world) {
    const ShardPlan p = make_shard_plan(qwen2_7b, world);
    CHECK(p.vocab_gather_bytes() == std::uint64_t(world) * p.vocab_shard_bytes());
    CHECK(p.layer_gather_bytes() == std::uint64_t(world) * p.layer_shard_bytes());
  }
}
