// The fsdp-lora phase's settings: defaults, file and flags, every refusal naming where the bad
// value came from, and unknown keys refused with file:line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "fsdp-lora/fsdp_config.h"

using namespace gpuaccept;
using namespace gpuaccept::fsdp;

namespace {
FsdpConfig from_yaml(const std::string& yaml, const FsdpFlags& flags = {}) {
  return load_fsdp_config(Config::parse(yaml, "bad.yaml"), flags);
}
}  // namespace

TEST_CASE("defaults: Qwen2-7B, LoRA r64 on q/k/v/o, recompute, no offload", "[fsdp][config]") {
  const FsdpConfig d = load_fsdp_config(Config{}, {});
  CHECK(d.model == "qwen2_7b");
  CHECK(d.layers == 0);
  CHECK(d.model_config().layers == 28);
  CHECK(d.seq_len == 4096);
  CHECK(d.micro_batch == 2);
  CHECK(d.grad_accum == 1);
  CHECK(d.steps == 30);
  CHECK(d.timing_skip == 3);
  CHECK(d.lora.rank == 64);
  CHECK(d.lora.alpha == 128);
  CHECK(d.lora.dropout == 0.05);
  CHECK(d.lora_targets == "qkvo");
  CHECK(d.lora.targets.size() == 4);
  CHECK(d.lr == 2e-4);
  CHECK(d.beta1 == 0.9);
  CHECK(d.beta2 == 0.999);
  CHECK(d.eps == 1e-8);
  CHECK(d.weight_decay == 0.0);
  CHECK(d.lr_warmup == 5);
  CHECK(d.grad_clip == 1.0);
  CHECK(d.recompute);
  CHECK(d.recompute_keep == RecomputeKeep::attention_block);
  CHECK(d.offload == "none");
  CHECK_FALSE(d.offload_cpu());
  CHECK(d.grad_reduce == "all_reduce");
  CHECK(d.gather == "copy_engine");
  CHECK(d.bucket_mib == 25);
  CHECK(d.prefetch_layers == 1);
  CHECK(d.seed == 1234);
  CHECK(d.data_vocab == 512);
  CHECK(d.data_successors == 4);
  CHECK(d.data_file.empty());
  CHECK(d.checkpoint_dir.empty());
  CHECK(d.matmul_autotune);
  CHECK(d.gradient_check);
  CHECK(d.grad_tolerance == 0.05);
  CHECK(d.loss_tolerance == 0.02);
  CHECK(d.equivalence_steps == 2);
  CHECK(d.equivalence_tolerance == 0.02);
  CHECK(d.scaling_steps == 12);  // 9 timed after timing_skip's 3 (6 once: 3 timed, a noisy median)
  CHECK(d.step_timeout_s == 600);
  CHECK(d.peak_tflops == 0);
  CHECK(d.memory_headroom_gib == 2.0);
  CHECK(d.debug_fault.kill_rank == -1);
}

TEST_CASE("every key is read from the file", "[fsdp][config]") {
  const FsdpConfig d = from_yaml(R"(fsdp_lora:
  model: qwen2_0_5b
  layers: 4
  seq_len: 512
  micro_batch: 3
  grad_accum: 2
  steps: 10
  timing_skip: 2
  lora:
    rank: 16
    alpha: 32
    dropout: 0
    targets: all
  lr: 1.0e-3
  beta1: 0.8
  beta2: 0.95
  eps: 1.0e-6
  weight_decay: 0.01
  lr_warmup: 0
  grad_clip: 0
  recompute: false
  recompute_keep: attention_block
  offload: cpu
  memory_headroom_gib: 0.5
  grad_reduce: reduce_scatter
  bucket_mib: 8
  prefetch_layers: 2
  gather: nccl
  matmul_autotune: false
  seed: 7
  data_vocab: 1000
  data_successors: 2
  data_file: /data/tokens.bin
  checkpoint_dir: /models/Qwen2-7B
  gradient_check: false
  grad_tolerance: 0.1
  loss_tolerance: 0.05
  equivalence_steps: 0
  equivalence_tolerance: 0.03
  scaling_steps: 0
  step_timeout_s: 120
  peak_tflops: 989.4
)");
  CHECK(d.model == "qwen2_0_5b");
  CHECK(d.layers == 4);
  CHECK(d.model_config().layers == 4);
  CHECK(d.model_config().hidden == 896);
  CHECK(d.seq_len == 512);
  CHECK(d.micro_batch == 3);
  CHECK(d.grad_accum == 2);
  CHECK(d.steps == 10);
  CHECK(d.timing_skip == 2);
  CHECK(d.lora.rank == 16);
  CHECK(d.lora.alpha == 32);
  CHECK(d.lora.scale() == 2.0);
  CHECK(d.lora.dropout == 0.0);
  CHECK(d.lora_targets == "all");
  CHECK(d.lora.targets.size() == 7);
  CHECK(d.lr == 1e-3);
  CHECK(d.beta1 == 0.8);
  CHECK(d.beta2 == 0.95);
  CHECK(d.eps == 1e-6);
  CHECK(d.weight_decay == 0.01);
  CHECK(d.lr_warmup == 0);
  CHECK(d.grad_clip == 0);
  CHECK_FALSE(d.recompute);
  CHECK(d.recompute_keep == RecomputeKeep::attention_block);
  CHECK(d.offload_cpu());
  CHECK(d.memory_headroom_gib == 0.5);
  CHECK(d.grad_reduce == "reduce_scatter");
  CHECK(d.bucket_mib == 8);
  CHECK(d.prefetch_layers == 2);
  CHECK(d.gather == "nccl");
  CHECK_FALSE(d.matmul_autotune);
  CHECK(d.seed == 7);
  CHECK(d.data_vocab == 1000);
  CHECK(d.data_successors == 2);
  CHECK(d.data_file == "/data/tokens.bin");
  CHECK(d.checkpoint_dir == "/models/Qwen2-7B");
  CHECK_FALSE(d.gradient_check);
  CHECK(d.grad_tolerance == 0.1);
  CHECK(d.loss_tolerance == 0.05);
  CHECK(d.equivalence_steps == 0);
  CHECK(d.equivalence_tolerance == 0.03);
  CHECK(d.scaling_steps == 0);
  CHECK(d.step_timeout_s == 120);
  CHECK(d.peak_tflops == 989.4);
}

TEST_CASE("flags override the file", "[fsdp][config]") {
  const Config c = Config::parse(
      "fsdp_lora:\n  model: qwen2_0_5b\n  seq_len: 1024\n  micro_batch: 4\n  recompute: true\n  offload: none\n", "t.yaml");
  FsdpFlags f;
  f.model = "qwen2_7b";
  f.layers = 2;
  f.seq_len = 256;
  f.micro_batch = 1;
  f.grad_accum = 8;
  f.steps = 5;
  f.recompute = false;
  f.offload = "cpu";
  const FsdpConfig d = load_fsdp_config(c, f);
  CHECK(d.model == "qwen2_7b");
  CHECK(d.layers == 2);
  CHECK(d.seq_len == 256);
  CHECK(d.micro_batch == 1);
  CHECK(d.grad_accum == 8);
  CHECK(d.steps == 5);
  CHECK(d.timing_skip == 3);
  CHECK_FALSE(d.recompute);
  CHECK(d.offload == "cpu");
  // Flags not given leave the file's values.
  const FsdpConfig from_file = load_fsdp_config(c, {});
  CHECK(from_file.model == "qwen2_0_5b");
  CHECK(from_file.micro_batch == 4);
  CHECK(from_file.recompute);
}

TEST_CASE("flags are parsed by CLI11, --no-recompute included", "[fsdp][config]") {
  auto parse = [](std::vector<std::string> args) {
    CLI::App app;
    FsdpFlags f;
    add_fsdp_flags(app, f);
    std::reverse(args.begin(), args.end());  // CLI11 takes the vector back to front
    app.parse(args);
    return f;
  };
  const FsdpFlags f = parse({"--model", "tiny", "--layers", "1", "--seq-len", "128", "--micro-batch", "3",
                             "--grad-accum", "2", "--steps", "9", "--no-recompute", "--offload", "cpu"});
  CHECK(f.model == "tiny");
  CHECK(f.layers == 1);
  CHECK(f.seq_len == 128);
  CHECK(f.micro_batch == 3);
  CHECK(f.grad_accum == 2);
  CHECK(f.steps == 9);
  REQUIRE(f.recompute.has_value());
  CHECK_FALSE(*f.recompute);
  CHECK(f.offload == "cpu");
  CHECK(parse({"--recompute"}).recompute == std::optional<bool>(true));
  CHECK_FALSE(parse({}).recompute.has_value());
}

TEST_CASE("a short run times its later half", "[fsdp][config]") {
  const FsdpConfig d = from_yaml("fsdp_lora:\n  steps: 4\n  timing_skip: 10\n");
  CHECK(d.timing_skip == 2);

}

TEST_CASE("bad values are refused naming the file, line and key", "[fsdp][config]") {
  struct Case {
    const char* yaml;
    const char* key;
    const char* says;  // part of the reason
  };
  const Case cases[] = {
      {"fsdp_lora:\n  model: qwen3_8b\n", "fsdp_lora.model", "qwen3_8b"},
      {"fsdp_lora:\n  layers: 29\n", "fsdp_lora.layers", "28"},
      {"fsdp_lora:\n  layers: -1\n", "fsdp_lora.layers", "negative"},
      {"fsdp_lora:\n  seq_len: 1000\n", "fsdp_lora.seq_len", "multiple of 64"},
      {"fsdp_lora:\n  seq_len: 0\n", "fsdp_lora.seq_len", "positive"},
      {"fsdp_lora:\n  micro_batch: 0\n", "fsdp_lora.micro_batch", "positive"},
      {"fsdp_lora:\n  grad_accum: -2\n", "fsdp_lora.grad_accum", "positive"},
      {"fsdp_lora:\n  steps: 0\n", "fsdp_lora.steps", "positive"},
      {"fsdp_lora:\n  timing_skip: -1\n", "fsdp_lora.timing_skip", "negative"},
      {"fsdp_lora:\n  learn_fraction: 0.25\n", "fsdp_lora.learn_fraction", "not a key"},  // issue 39: the trend judges
      {"fsdp_lora:\n  lora:\n    rank: 0\n", "fsdp_lora.lora.rank", "positive"},
      {"fsdp_lora:\n  lora:\n    alpha: -16\n", "fsdp_lora.lora.alpha", "positive"},
      {"fsdp_lora:\n  lora:\n    dropout: 1.0\n", "fsdp_lora.lora.dropout", "[0, 1)"},
      {"fsdp_lora:\n  lora:\n    dropout: -0.1\n", "fsdp_lora.lora.dropout", "negative"},
      {"fsdp_lora:\n  lora:\n    targets: qv\n", "fsdp_lora.lora.targets", "'qv'"},
      {"fsdp_lora:\n  lr: 0\n", "fsdp_lora.lr", "positive"},
      {"fsdp_lora:\n  gather: nvlink\n", "fsdp_lora.gather", "nccl or copy_engine"},
      {"fsdp_lora:\n  recompute_keep: mlp\n", "fsdp_lora.recompute_keep", "attention_block"},
      {"fsdp_lora:\n  beta1: 1.0\n", "fsdp_lora.beta1", "[0, 1)"},
      {"fsdp_lora:\n  beta2: -0.5\n", "fsdp_lora.beta2", "negative"},
      {"fsdp_lora:\n  eps: 0\n", "fsdp_lora.eps", "positive"},
      {"fsdp_lora:\n  weight_decay: -0.1\n", "fsdp_lora.weight_decay", "negative"},
      {"fsdp_lora:\n  lr_warmup: -1\n", "fsdp_lora.lr_warmup", "negative"},
      {"fsdp_lora:\n  grad_clip: -1\n", "fsdp_lora.grad_clip", "negative"},
      {"fsdp_lora:\n  recompute: maybe\n", "fsdp_lora.recompute", "true or false"},
      {"fsdp_lora:\n  offload: nvme\n", "fsdp_lora.offload", "none or cpu"},
      {"fsdp_lora:\n  memory_headroom_gib: -1\n", "fsdp_lora.memory_headroom_gib", "negative"},
      {"fsdp_lora:\n  grad_reduce: all_gather\n", "fsdp_lora.grad_reduce", "all_reduce or reduce_scatter"},
      {"fsdp_lora:\n  bucket_mib: 0\n", "fsdp_lora.bucket_mib", "positive"},
      {"fsdp_lora:\n  prefetch_layers: 0\n", "fsdp_lora.prefetch_layers", "positive"},
      {"fsdp_lora:\n  seed: -3\n", "fsdp_lora.seed", "integer"},
      {"fsdp_lora:\n  data_vocab: 1\n", "fsdp_lora.data_vocab", "between 2"},
      {"fsdp_lora:\n  data_vocab: 152065\n", "fsdp_lora.data_vocab", "152064"},
      {"fsdp_lora:\n  data_successors: 0\n", "fsdp_lora.data_successors", "positive"},
      {"fsdp_lora:\n  data_file: [a, b]\n", "fsdp_lora.data_file", "a string"},
      {"fsdp_lora:\n  gradient_check: 2\n", "fsdp_lora.gradient_check", "true or false"},
      {"fsdp_lora:\n  grad_tolerance: 0\n", "fsdp_lora.grad_tolerance", "positive"},
      {"fsdp_lora:\n  loss_tolerance: -1\n", "fsdp_lora.loss_tolerance", "positive"},
      {"fsdp_lora:\n  equivalence_steps: -1\n", "fsdp_lora.equivalence_steps", "negative"},
      {"fsdp_lora:\n  equivalence_tolerance: 0\n", "fsdp_lora.equivalence_tolerance", "positive"},
      {"fsdp_lora:\n  scaling_steps: -1\n", "fsdp_lora.scaling_steps", "negative"},
      {"fsdp_lora:\n  step_timeout_s: 0\n", "fsdp_lora.step_timeout_s", "positive"},
      {"fsdp_lora:\n  peak_tflops: -1\n", "fsdp_lora.peak_tflops", "negative"},
      {"fsdp_lora:\n  steps: many\n", "fsdp_lora.steps", "an integer"},
  };
  for (const Case& k : cases) {
    INFO(k.yaml);
    // Every case puts its bad value on the file's line 2 or 3 (lora.* keys).
    const std::string line = std::string(k.key).rfind("fsdp_lora.lora.", 0) == 0 ? "bad.yaml:3:" : "bad.yaml:2:";
    CHECK_THROWS_AS(from_yaml(k.yaml), InputError);
    CHECK_THROWS_WITH(from_yaml(k.yaml),
                      Catch::Contains(line) && Catch::Contains(std::string("'") + k.key + "'") && Catch::Contains(k.says));
  }
}

TEST_CASE("bad flag values name the flag", "[fsdp][config]") {
  FsdpFlags f;
  f.model = "llama";
  CHECK_THROWS_WITH(from_yaml("", f), Catch::Contains("--model") && Catch::Contains("llama"));
  f = {};
  f.seq_len = 100;
  CHECK_THROWS_WITH(from_yaml("", f), Catch::Contains("--seq-len") && Catch::Contains("multiple of 64"));
  f = {};
  f.layers = 100;
  CHECK_THROWS_WITH(from_yaml("", f), Catch::Contains("--layers") && Catch::Contains("28"));
  f = {};
  f.steps = -1;
  CHECK_THROWS_WITH(from_yaml("", f), Catch::Contains("--steps"));
  f = {};
  f.offload = "disk";
  CHECK_THROWS_WITH(from_yaml("", f), Catch::Contains("--offload") && Catch::Contains("disk"));
  // A good flag over a bad file value still wins: the flag is what runs.
  f = {};
  f.seq_len = 128;
  CHECK(from_yaml("fsdp_lora:\n  seq_len: 100\n", f).seq_len == 128);
}

TEST_CASE("data_vocab is checked against the chosen model's vocabulary", "[fsdp][config]") {
  CHECK(from_yaml("fsdp_lora:\n  model: tiny\n  data_vocab: 13\n").data_vocab == 13);
  CHECK_THROWS_WITH(from_yaml("fsdp_lora:\n  model: tiny\n  data_vocab: 14\n"),
                    Catch::Contains("bad.yaml:3:") && Catch::Contains("fsdp_lora.data_vocab"));
}

TEST_CASE("unknown keys are refused with file, line and key, and a likely meaning", "[fsdp][config]") {
  CHECK_THROWS_AS(from_yaml("fsdp_lora:\n  steps: 3\n  recompte: false\n"), InputError);
  CHECK_THROWS_WITH(from_yaml("fsdp_lora:\n  steps: 3\n  recompte: false\n"),
                    Catch::Contains("bad.yaml:3:") && Catch::Contains("'fsdp_lora.recompte'") &&
                        Catch::Contains("did you mean 'recompute'"));
  CHECK_THROWS_WITH(from_yaml("fsdp_lora:\n  lora:\n    rank: 8\n    alfa: 16\n"),
                    Catch::Contains("bad.yaml:4:") && Catch::Contains("'fsdp_lora.lora.alfa'") &&
                        Catch::Contains("did you mean 'alpha'"));
  // Far from every key: no guess, but the list of known keys.
  CHECK_THROWS_WITH(from_yaml("fsdp_lora:\n  tensor_parallel: 2\n"),
                    Catch::Contains("bad.yaml:2:") && Catch::Contains("'fsdp_lora.tensor_parallel'") &&
                        !Catch::Contains("did you mean") && Catch::Contains("prefetch_layers"));
  // The section and lora must be mappings.
  CHECK_THROWS_WITH(from_yaml("fsdp_lora: 3\n"), Catch::Contains("bad.yaml:1:") && Catch::Contains("'fsdp_lora'"));
  CHECK_THROWS_WITH(from_yaml("fsdp_lora:\n  lora: 64\n"), Catch::Contains("bad.yaml:2:") && Catch::Contains("'fsdp_lora.lora'"));
  // Other phases' sections are not this phase's business; an empty section is fine.
  CHECK_NOTHROW(from_yaml("ddp:\n  whatever: 1\nfsdp_lora:\n"));
  CHECK_NOTHROW(from_yaml("fsdp_lora:\n  lora:\n"));
}

TEST_CASE("checkpoint.include_base: off by default, on where asked", "[fsdp][config]") {
  CHECK_FALSE(load_fsdp_config(Config{}, {}).checkpoint.include_base);
  const FsdpConfig on = from_yaml("fsdp_lora:\n  steps: 8\n  checkpoint:\n    step: 4\n    include_base: true\n");
  CHECK(on.checkpoint.include_base);
  CHECK(on.checkpoint.step == 4);
  CHECK_THROWS_WITH(from_yaml("fsdp_lora:\n  checkpoint:\n    include_base: maybe\n"),
                    Catch::Contains("fsdp_lora.checkpoint.include_base"));
}
