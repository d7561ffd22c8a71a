// The fsdp-lora records' arithmetic (fsdp_stats.h).
#include <catch2/catch.hpp>

#include <cmath>

#include "fsdp-lora/fsdp_stats.h"
#include "fsdp-lora/qwen_config.h"

using namespace gpuaccept::fsdp;

TEST_CASE("fsdp_stats: median after the warm-up steps", "[fsdp][stats]") {
  CHECK(median_after({100, 1, 3, 2}, 1) == Approx(2));
  CHECK(median_after({100, 1, 3, 2, 4}, 1) == Approx(2.5));
  CHECK(median_after({5, 7}, 9) == Approx(7));  // skip covers all: the last step
  CHECK(std::isnan(median_after({}, 0)));
}

TEST_CASE("fsdp_stats: hidden share of the all-gathers", "[fsdp][stats]") {
  CHECK(hidden_percent(10, 1) == Approx(90));
  CHECK(hidden_percent(10, 20) == Approx(0));
  CHECK(hidden_percent(0, 0) == Approx(100));
}

TEST_CASE("fsdp_stats: the 7B shape's hardware FLOPs per token with recompute", "[fsdp][stats]") {
  LoraConfig lora;
  const double per_token = static_cast<double>(training_flops_per_token(qwen2_7b, lora, 4096, true, RecomputeKeep::attention));
  // ~6 x 7B parameters per token plus attention: between 40 and 60 GFLOP.
  CHECK(per_token > 4e10);
  CHECK(per_token < 6e10);
}

TEST_CASE("fsdp_stats: scaling efficiency is per-GPU throughput at scale over alone", "[fsdp][stats]") {
  CHECK(scaling_efficiency(9500, 10000) == Approx(95));
  CHECK(scaling_efficiency(10500, 10000) == Approx(105));  // faster than alone is reported as it is
  CHECK(std::isnan(scaling_efficiency(9500, 0)));
  CHECK(std::isnan(scaling_efficiency(0, 10000)));
  CHECK(std::isnan(scaling_efficiency(NAN, 10000)));
  CHECK(std::isnan(scaling_efficiency(9500, INFINITY)));
}
