// The ddp phase's settings: defaults, flags over the file, and bad values named by key.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "ddp/ddp_config.h"

using namespace gpuaccept;
using namespace gpuaccept::ddp;

TEST_CASE("defaults are the issue's GPT-2 124M run") {
  const DdpConfig d = load_ddp_config(Config{}, {});
  CHECK(d.model == "gpt2_124m");
  CHECK(d.micro_batch == 16);
  CHECK(d.seq_len == 1024);
  CHECK(d.comm_sms == 0);  // matmuls planned for every SM unless asked
  CHECK(d.grad_reduce == "bf16");  // the faster on 4 GPUs; fp32 (PyTorch DDP's) on request
}

TEST_CASE("grad_reduce is fp32 or bf16") {
  CHECK(load_ddp_config(Config::parse("ddp:\n  grad_reduce: fp32\n", "t.yaml"), {}).grad_reduce == "fp32");
  CHECK_THROWS_WITH(load_ddp_config(Config::parse("ddp:\n  grad_reduce: fp8\n", "bad.yaml"), {}),
                    Catch::Contains("bad.yaml") && Catch::Contains("ddp.grad_reduce") && Catch::Contains("fp8"));
}

TEST_CASE("all_reduce is nccl or copy_engine") {
  CHECK(load_ddp_config(Config::parse("ddp:\n  steps: 3\n", "t.yaml"), {}).all_reduce == "nccl");
  CHECK(load_ddp_config(Config::parse("ddp:\n  all_reduce: copy_engine\n", "t.yaml"), {}).all_reduce == "copy_engine");
  CHECK_THROWS_WITH(load_ddp_config(Config::parse("ddp:\n  all_reduce: nvls\n", "bad.yaml"), {}),
                    Catch::Contains("bad.yaml") && Catch::Contains("ddp.all_reduce") && Catch::Contains("nvls"));
}

TEST_CASE("comm_sms is read and bounded by NCCL's CTA limit") {
  CHECK(load_ddp_config(Config::parse("ddp:\n  comm_sms: 16\n", "t.yaml"), {}).comm_sms == 16);
  CHECK_THROWS_WITH(load_ddp_config(Config::parse("ddp:\n  comm_sms: 65\n", "bad.yaml"), {}),
                    Catch::Contains("bad.yaml") && Catch::Contains("ddp.comm_sms"));
  CHECK_THROWS_WITH(load_ddp_config(Config::parse("ddp:\n  comm_sms: -1\n", "bad.yaml"), {}),
                    Catch::Contains("ddp.comm_sms"));
}

TEST_CASE("cuda_graph is on unless turned off, and a boolean") {
  CHECK(load_ddp_config(Config{}, {}).cuda_graph);
  CHECK_FALSE(load_ddp_config(Config::parse("ddp:\n  cuda_graph: false\n", "t.yaml"), {}).cuda_graph);
  CHECK_THROWS_WITH(load_ddp_config(Config::parse("ddp:\n  cuda_graph: sometimes\n", "bad.yaml"), {}),
                    Catch::Contains("bad.yaml") && Catch::Contains("ddp.cuda_graph"));
}

TEST_CASE("flags override the config file") {
  const Config c = Config::parse("ddp:\n  model: tiny\n  micro_batch: 4\n  seq_len: 8\n  data_vocab: 8\n", "test.yaml");
  DdpFlags f;
  f.micro_batch = 2;
  const DdpConfig d = load_ddp_config(c, f);
  CHECK(d.model == "tiny");
  CHECK(d.micro_batch == 2);
  CHECK(d.seq_len == 8);
}

TEST_CASE("bad values name the file and the key") {
  CHECK_THROWS_WITH(load_ddp_config(Config::parse("ddp:\n  model: gpt5\n", "bad.yaml"), {}),
                    Catch::Contains("bad.yaml") && Catch::Contains("ddp.model"));
  CHECK_THROWS_WITH(load_ddp_config(Config::parse("ddp:\n  seq_len: 1001\n", "bad.yaml"), {}),
                    Catch::Contains("ddp.seq_len"));
  CHECK_THROWS_WITH(load_ddp_config(Config::parse("ddp:\n  lr: -1\n", "bad.yaml"), {}), Catch::Contains("ddp.lr"));
  CHECK_THROWS_AS(load_ddp_config(Config::parse("ddp:\n  steps: many\n", "bad.yaml"), {}), InputError);
}

TEST_CASE("an unknown ddp key is refused with file, line and the key it likely meant") {
  CHECK_THROWS_WITH(load_ddp_config(Config::parse("ddp:\n  stpes: 10\n", "c.yaml"), DdpFlags{}),
                    Catch::StartsWith("c.yaml:2: key 'ddp.stpes'") && Catch::Contains("did you mean 'steps'"));
  CHECK_THROWS_WITH(load_ddp_config(Config::parse("ddp:\n  steps: 0\n", "c.yaml"), DdpFlags{}),
                    Catch::Contains("ddp.steps") && Catch::Contains("positive"));
}

TEST_CASE("checkpoint.include_base is fsdp-lora's: ddp refuses it as an unknown key") {
  // ddp's state is all trainable (weights and moments, already saved); only fsdp-lora has a
  // frozen base whose shards a checkpoint may add.
  CHECK_THROWS_WITH(
      load_ddp_config(Config::parse("ddp:\n  checkpoint:\n    include_base: true\n", "c.yaml"), DdpFlags{}),
      Catch::Contains("c.yaml:3") && Catch::Contains("ddp.checkpoint.include_base"));
}
