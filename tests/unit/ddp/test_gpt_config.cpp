#include <catch2/catch.hpp>

#include <stdexcept>

#include "ddp/gpt_config.h"

using namespace gpuaccept::ddp;

TEST_CASE("GPT-2 presets have the published parameter counts", "[ddp][config]") {
  // Unpadded vocabulary (50257). llm.c pads to 50304 and reports 124,475,904 for 124M.
  CHECK(parameter_count(gpt2_124m) == 124'439'808);
  CHECK(parameter_count(gpt2_350m) == 354'823'168);
  CHECK(parameter_count(gpt2_774m) == 774'030'080);
  CHECK(parameter_count(gpt2_1558m) == 1'557'611'200);
  GptConfig padded = gpt2_124m;
  padded.vocab = 50304;
  CHECK(parameter_count(padded) == 124'475'904);
}

TEST_CASE("training FLOPs per token are 6N + 12*L*H*Q*T", "[ddp][config]") {
  // 6 * 124,439,808 + 12 * 12 layers * 12 heads * 64 head dim * 1024 tokens
  CHECK(training_flops_per_token(gpt2_124m, 1024) == 746'638'848ull + 113'246'208ull);
  CHECK(training_flops_per_token(gpt_tiny, 8) == 6 * parameter_count(gpt_tiny) + 12 * 2 * 2 * 4 * 8);
}

TEST_CASE("presets are found by name, and an unknown name is named in the error", "[ddp][config]") {
  CHECK(preset_by_name("gpt2_124m").channels == 768);
  CHECK(preset_by_name("gpt2_1558m").heads == 25);
  CHECK(preset_by_name("tiny").vocab == gpt_tiny.vocab);
  for (const auto& name : preset_names()) CHECK_NOTHROW(validate(preset_by_name(name)));
  CHECK_THROWS_AS(preset_by_name("gpt2_125m"), std::invalid_argument);
  CHECK_THROWS_WITH(preset_by_name("gpt2_125m"), Catch::Contains("'gpt2_125m'"));
}

TEST_CASE("a config whose channels do not split into heads is refused", "[ddp][config]") {
  CHECK_THROWS_WITH(validate(GptConfig{11, 8, 2, 3, 8}), Catch::Contains("multiple of heads"));
  CHECK_THROWS_AS(validate(GptConfig{0, 8, 2, 2, 8}), std::invalid_argument);
}
