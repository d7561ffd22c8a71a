#include <catch2/catch.hpp>

#include "common/error.h"
#include "config/config.h"

using namespace gpuaccept;

TEST_CASE("dotted keys find nested values, absent keys give the fallback", "[config]") {
  const Config c = Config::parse("discover:\n  expected_gpus_per_node: 8\nsmoke:\n  sizes: [4096, 8192]\n", "t.yaml");
  CHECK(c.get<int>("discover.expected_gpus_per_node", 0) == 8);
  CHECK(c.get<int>("discover.missing", 5) == 5);
  CHECK(c.get<int>("nothing.here.at.all", 7) == 7);
  CHECK(c.get<std::vector<int>>("smoke.sizes", {}) == std::vector<int>{4096, 8192});
  CHECK_FALSE(c.get_optional<int>("discover.other").has_value());
  CHECK(Config().get<int>("a.b", 3) == 3);
}

TEST_CASE("a value of the wrong type names file, line and key", "[config]") {
  const Config c = Config::parse("# comment\ndiscover:\n  expected_gpus_per_node: eight\n", "configs/x.yaml");
  CHECK_THROWS_AS(c.get<int>("discover.expected_gpus_per_node", 0), InputError);
  CHECK_THROWS_WITH(c.get<int>("discover.expected_gpus_per_node", 0),
                    Catch::Contains("configs/x.yaml:3") && Catch::Contains("discover.expected_gpus_per_node") &&
                        Catch::Contains("eight"));
}

TEST_CASE("malformed YAML names file and line", "[config]") {
  CHECK_THROWS_WITH(Config::parse("a: [1, 2\nb: 3\n", "bad.yaml"), Catch::StartsWith("bad.yaml:"));
  CHECK_THROWS_WITH(Config::parse("- just\n- a list\n", "list.yaml"), Catch::Contains("list.yaml:1"));
  CHECK_THROWS_WITH(Config::load("/nonexistent/gpuaccept.yaml"), Catch::Contains("/nonexistent/gpuaccept.yaml"));
}

TEST_CASE("positive and non-negative values are checked with file, line and key", "[config]") {
  const Config c = Config::parse("smoke:\n  repeats: 0\n  seconds: -2.5\n  size: 8\n", "configs/y.yaml");
  CHECK(c.get_positive("smoke.size", 1) == 8);
  CHECK(c.get_positive("smoke.absent", 7) == 7);
  CHECK(c.get_non_negative("smoke.repeats", 3) == 0);
  CHECK_THROWS_WITH(c.get_positive("smoke.repeats", 3),
                    Catch::Contains("configs/y.yaml:2") && Catch::Contains("smoke.repeats") &&
                        Catch::Contains("must be positive"));
  CHECK_THROWS_WITH(c.get_non_negative("smoke.seconds", 1.0),
                    Catch::Contains("configs/y.yaml:3") && Catch::Contains("must not be negative"));
}

TEST_CASE("unknown keys and sections are refused with file, line and a likely meaning", "[config]") {
  const Config c = Config::parse("smoke:\n  gemm_sizes: [4096]\nsmok:\n  x: 1\n", "c.yaml");
  CHECK_NOTHROW(c.refuse_unknown_keys("smoke", {"gemm_sizes", "gemm_dtypes"}));
  CHECK_THROWS_WITH(c.refuse_unknown_keys("smoke", {"gemm_dtypes"}),
                    Catch::StartsWith("c.yaml:2: key 'smoke.gemm_sizes'") && !Catch::Contains("did you mean"));
  CHECK_THROWS_WITH(c.refuse_unknown_sections(),
                    Catch::StartsWith("c.yaml:3: key 'smok'") && Catch::Contains("did you mean 'smoke'"));
  CHECK_NOTHROW(Config{}.refuse_unknown_sections());
  CHECK_NOTHROW(c.refuse_unknown_keys("ddp", {"steps"}));  // an absent section has nothing to refuse
  CHECK_THROWS_WITH(Config::parse("ddp: 3\n", "c.yaml").refuse_unknown_keys("ddp", {"steps"}),
                    Catch::Contains("expected a mapping"));
}
