// Token files in llm.c's format: read back exactly, batches reproducible per (shard, step),
// and every malformed file named with what is wrong.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/error.h"
#include "train/token_source.h"

using namespace gpuaccept;
using namespace gpuaccept::train;

namespace {

std::filesystem::path write_tokens(const std::string& name, std::int32_t magic, std::int32_t count,
                                   const std::vector<std::uint16_t>& tokens) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream out(path, std::ios::binary);
  std::int32_t header[256] = {magic, 1, count};
  out.write(reinterpret_cast<const char*>(header), sizeof header);
  out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 2));
  return path;
}

}  // namespace

TEST_CASE("a token file gives windows of consecutive tokens, targets shifted by one") {
  std::vector<std::uint16_t> tokens(1000);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::uint16_t>(i % 97);
  const auto path = write_tokens("gpuaccept-tokens-ok.bin", 20240520, 1000, tokens);
  const auto src = file_source(path, 100, 16);
  CHECK_FALSE(src->loss_floor().has_value());
  const TokenBatch a = src->sample(3, 7, 4, 16);
  REQUIRE(a.tokens.size() == 64);
  for (int s = 0; s < 4; ++s)
    for (int t = 0; t < 16; ++t) {
      const int tok = a.tokens[static_cast<std::size_t>(s * 16 + t)];
      CHECK(a.targets[static_cast<std::size_t>(s * 16 + t)] == (tok + 1) % 97);
    }
  const TokenBatch again = src->sample(3, 7, 4, 16);
  CHECK(again.tokens == a.tokens);
  CHECK(src->sample(4, 7, 4, 16).tokens != a.tokens);
  std::filesystem::remove(path);
}

TEST_CASE("malformed token files are refused with the file and the fault named") {
  std::vector<std::uint16_t> tokens(100, 5);
  const auto bad_magic = write_tokens("gpuaccept-tokens-magic.bin", 1234, 100, tokens);
  CHECK_THROWS_WITH(file_source(bad_magic, 100, 16), Catch::Contains("gpuaccept-tokens-magic.bin") &&
                                                       Catch::Contains("not an llm.c token file"));
  const auto truncated = write_tokens("gpuaccept-tokens-short.bin", 20240520, 500, tokens);
  CHECK_THROWS_WITH(file_source(truncated, 100, 16), Catch::Contains("truncated"));
  tokens[42] = 300;
  const auto outside = write_tokens("gpuaccept-tokens-vocab.bin", 20240520, 100, tokens);
  CHECK_THROWS_WITH(file_source(outside, 100, 16), Catch::Contains("token 300 at position 42"));
  CHECK_THROWS_AS(file_source("/nonexistent/tokens.bin", 100, 16), InputError);
  for (const auto& p : {bad_magic, truncated, outside}) std::filesystem::remove(p);
}

TEST_CASE("the Markov source reports its entropy floor") {
  const auto src = markov_source(64, 1, 4);
  REQUIRE(src->loss_floor().has_value());
  CHECK(*src->loss_floor() > 0);
  CHECK(*src->loss_floor() < std::log(64.0));
}
