// Qwen2 shapes and LoRA sizes: the published counts, the projections' shapes, FLOPs, refusals.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "fsdp-lora/qwen_config.h"

using namespace gpuaccept::fsdp;

TEST_CASE("Qwen2-7B with its untied head has 7,615,616,512 base parameters", "[fsdp][qwen]") {
  // By hand: C = 3584, I = 18944, V = 152064, kv dim = 4 heads x 128 = 512.
  const std::uint64_t C = 3584, I = 18944, V = 152064, KV = 512;
  const std::uint64_t per_layer = (C * C + C)          // q_proj weight and bias
                                  + 2 * (C * KV + KV)   // k_proj, v_proj weights and biases
                                  + C * C               // o_proj
                                  + 3 * I * C           // gate, up, down
                                  + 2 * C;              // two RMSNorm weights
  CHECK(per_layer == 233'057'792);
  CHECK(layer_parameter_count(qwen2_7b) == per_layer);
  CHECK(base_parameter_count(qwen2_7b) == V * C + 28 * per_layer + C + V * C);
  CHECK(base_parameter_count(qwen2_7b) == 7'615'616'512);
}

TEST_CASE("Qwen2-0.5B's shape untied is ~0.63B parameters", "[fsdp][qwen]") {
  // The real 0.5B (tied) is 494,032,768; untying adds one more 151936 x 896 matrix.
  CHECK(base_parameter_count(qwen2_0_5b) == 494'032'768ull + 151'936ull * 896ull);
}

TEST_CASE("LoRA r=64 trainable counts on Qwen2-7B", "[fsdp][qwen][lora]") {
  LoraConfig qkvo;  // the defaults: r 64, q/k/v/o
  CHECK(lora_parameter_count(qwen2_7b, qkvo) == 40'370'176);
  LoraConfig all;
  all.targets = lora_targets_by_name("all");
  CHECK(lora_parameter_count(qwen2_7b, all) == 161'480'704);
  // Linear in the rank.
  LoraConfig r8 = qkvo;
  r8.rank = 8;
  CHECK(lora_parameter_count(qwen2_7b, r8) * 8 == lora_parameter_count(qwen2_7b, qkvo));
  CHECK(qkvo.scale() == 2.0);
}

TEST_CASE("projections have Hugging Face's names and (out, in) shapes", "[fsdp][qwen]") {
  const QwenConfig& c = qwen2_7b;
  CHECK(std::string(projection_name(Projection::q)) == "q_proj");
  CHECK(std::string(projection_name(Projection::down)) == "down_proj");
  CHECK(projection_in(c, Projection::q) == 3584);
  CHECK(projection_out(c, Projection::q) == 3584);
  CHECK(projection_out(c, Projection::k) == 512);
  CHECK(projection_out(c, Projection::v) == 512);
  CHECK(projection_in(c, Projection::o) == 3584);
  CHECK(projection_out(c, Projection::gate) == 18944);
  CHECK(projection_in(c, Projection::down) == 18944);
  CHECK(projection_out(c, Projection::down) == 3584);
  CHECK(projection_has_bias(Projection::q));
  CHECK(projection_has_bias(Projection::v));
  CHECK_FALSE(projection_has_bias(Projection::o));
  CHECK_FALSE(projection_has_bias(Projection::gate));
  // The tiny model: heads x head_dim equals hidden, kv dim is 2 x 4.
  CHECK(projection_out(qwen_tiny, Projection::k) == 8);
  CHECK(projection_in(qwen_tiny, Projection::o) == 16);
}

TEST_CASE("LoRA targets by name", "[fsdp][qwen][lora]") {
  CHECK(lora_targets_by_name("qkvo") == std::vector<Projection>{Projection::q, Projection::k, Projection::v, Projection::o});
  CHECK(lora_targets_by_name("all").size() == 7);
  CHECK(lora_targets_by_name("all").back() == Projection::down);
  CHECK_THROWS_WITH(lora_targets_by_name("qv"), Catch::Contains("'qv'"));
}

TEST_CASE("training FLOPs per token follow the documented count", "[fsdp][qwen]") {
  LoraConfig lora;
  // Matmul weights per layer: 2 x 3584^2 + 2 x 3584 x 512 + 3 x 3584 x 18944 = 233,046,016;
  // x 28 layers + head 152064 x 3584 = 7,070,285,824.
  const std::uint64_t base_matmul = 7'070'285'824ull;
  const std::uint64_t attention_forward = 4ull * 28 * 28 * 128 * 4096;  // 1,644,167,168
  const std::uint64_t lora_n = 40'370'176;
  using K = RecomputeKeep;
  CHECK(training_flops_per_token(qwen2_7b, lora, 4096, false, K::attention) ==
        4 * base_matmul + 3 * attention_forward + 6 * lora_n);
  // A recomputed layer runs q, k, v, o, gate and up again (not down, whose output is the next
  // layer's kept input; not the head): 2 x 3584^2 + 2 x 3584 x 512 + 2 x 3584 x 18944 a layer.
  const std::uint64_t all_but_down = 28ull * (2ull * 3584 * 3584 + 2ull * 3584 * 512 + 2ull * 3584 * 18944);
  const std::uint64_t gate_up = 28ull * 2 * 3584 * 18944;
  CHECK(training_flops_per_token(qwen2_7b, lora, 4096, true, K::input) ==
        4 * base_matmul + 2 * all_but_down + 4 * attention_forward + 8 * lora_n);
  CHECK(training_flops_per_token(qwen2_7b, lora, 4096, true, K::attention) ==
        4 * base_matmul + 2 * all_but_down + 3 * attention_forward + 8 * lora_n);
  CHECK(training_flops_per_token(qwen2_7b, lora, 4096, true, K::attention_block) ==
        4 * base_matmul + 2 * gate_up + 3 * attention_forward + 8 * lora_n);
  // Without recompute what is kept is everything.
  CHECK(training_flops_per_token(qwen2_7b, lora, 4096, false, K::input) ==
        training_flops_per_token(qwen2_7b, lora, 4096, false, K::attention_block));
  CHECK(training_flops_per_token(qwen2_7b, lora, 4096, false, K::attention) == 33'455'865'856ull);
  CHECK_THAT(training_flops_formula(true, K::attention_block), Catch::Contains("2 x the gate and up weights") &&
                                                                    Catch::Contains("3 x 4 L NH HD T"));
  CHECK_THAT(training_flops_formula(true, K::input), Catch::Contains("4 x 4 L NH HD T"));
  CHECK_THAT(training_flops_formula(false, K::input), Catch::Contains("6 x LoRA parameters"));
  // The anchor's count: (4 or 6) x all base parameters + 12 L C T.
  CHECK(anchor_flops_per_token(qwen2_7b, 4096, true) == 6 * 7'615'616'512ull + 12ull * 28 * 3584 * 4096);
  CHECK(anchor_flops_per_token(qwen2_7b, 4096, false) == 4 * 7'615'616'512ull + 12ull * 28 * 3584 * 4096);
}

TEST_CASE("recompute_keep by name, and its names back", "[fsdp][qwen]") {
  for (RecomputeKeep k : {RecomputeKeep::input, RecomputeKeep::attention, RecomputeKeep::attention_block})
    CHECK(recompute_keep_by_name(recompute_keep_name(k)) == k);
  CHECK_THROWS_WITH(recompute_keep_by_name("mlp"), Catch::Contains("'mlp'") && Catch::Contains("attention_block"));
}

TEST_CASE("presets by name; unknown names and bad shapes are refused naming what is wrong", "[fsdp][qwen]") {
  CHECK(qwen_preset_by_name("qwen2_7b").hidden == 3584);
  CHECK(qwen_preset_by_name("tiny").vocab == qwen_tiny.vocab);
  CHECK(qwen_preset_names() == std::vector<std::string>{"tiny", "qwen2_0_5b", "qwen2_7b"});
  for (const auto& name : qwen_preset_names()) CHECK_NOTHROW(validate(qwen_preset_by_name(name)));
  CHECK_THROWS_AS(qwen_preset_by_name("qwen2_72b"), std::invalid_argument);
  CHECK_THROWS_WITH(qwen_preset_by_name("qwen2_72b"), Catch::Contains("'qwen2_72b'") && Catch::Contains("qwen2_7b"));

  QwenConfig c = qwen_tiny;
  c.kv_heads = 3;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("kv_heads"));
  c = qwen_tiny;
  c.head_dim = 5;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("head_dim"));
  c = qwen_tiny;
  c.intermediate = 0;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("intermediate"));
  c = qwen_tiny;
  c.rms_eps = 0;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("rms_eps"));
  c = qwen_tiny;
  c.rope_theta = -1;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("rope_theta"));
}

TEST_CASE("LoRA dropout scratch: one copy per adapter of the widest group reading one input", "[fsdp][qwen]") {
  LoraConfig lora;  // q, k, v, o
  // q, k and v read the hidden state: three copies of 3584 columns; o one of 3584.
  CHECK(lora_dropout_scratch_columns(qwen2_7b, lora) == 3 * 3584);
  // All seven: gate and up two of 3584, down one of 18944, the widest.
  lora.targets = lora_targets_by_name("all");
  CHECK(lora_dropout_scratch_columns(qwen2_7b, lora) == 18944);
  // Only o: its own input.
  lora.targets = {Projection::o};
  CHECK(lora_dropout_scratch_columns(qwen2_7b, lora) == 3584);
  // tiny: q, k, v read hidden 16 (48 columns), down reads intermediate 24.
  lora.targets = lora_targets_by_name("all");
  CHECK(lora_dropout_scratch_columns(qwen_tiny, lora) == 48);
  lora.targets.clear();
  CHECK(lora_dropout_scratch_columns(qwen_tiny, lora) == 1);
}
