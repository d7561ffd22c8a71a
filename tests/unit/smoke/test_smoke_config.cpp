#include <catch2/catch.hpp>

#include "smoke/smoke_config.h"

using namespace gpuaccept;
using namespace gpuaccept::smoke;

TEST_CASE("smoke config: defaults and overrides", "[smoke][config]") {
  const SmokeConfig d = load_smoke_config(Config{});
  CHECK(d.gemm_sizes == std::vector<int>{4096, 8192, 16384});
  CHECK(d.gemm_dtypes.size() == 5);
  CHECK(d.require_exclusive_cpus);
  CHECK(d.sustained_seconds == 10);

  const SmokeConfig s = load_smoke_config(Config::parse(
      "smoke:\n  gemm_sizes: [256, 512]\n  gemm_dtypes: [bf16, fp8_e4m3]\n  sustained_seconds: 0.5\n"
      "  require_exclusive_cpus: false\n  fs_dir: /tmp/x\n",
      "test.yaml"));
  CHECK(s.gemm_sizes == std::vector<int>{256, 512});
  CHECK(s.gemm_dtypes == std::vector<GemmDtype>{GemmDtype::bf16, GemmDtype::fp8_e4m3});
  CHECK(s.sustained_seconds == 0.5);
  CHECK_FALSE(s.require_exclusive_cpus);
  CHECK(s.fs_dir == "/tmp/x");
}

TEST_CASE("smoke config: bad values name the key", "[smoke][config]") {
  CHECK_THROWS_WITH(load_smoke_config(Config::parse("smoke:\n  gemm_dtypes: [bf16, int4]\n", "c.yaml")),
                    Catch::Contains("smoke.gemm_dtypes") && Catch::Contains("int4"));
  CHECK_THROWS_WITH(load_smoke_config(Config::parse("smoke:\n  gemm_sizes: [100]\n", "c.yaml")),
                    Catch::Contains("multiple of 16"));
  CHECK_THROWS_WITH(load_smoke_config(Config::parse("smoke:\n  gemm_repeats: 0\n", "c.yaml")),
                    Catch::Contains("smoke.gemm_repeats"));
  CHECK_THROWS_AS(load_smoke_config(Config::parse("smoke:\n  sustained_seconds: -1\n", "c.yaml")), InputError);
}

TEST_CASE("smoke config: an unknown key is refused with file, line and the key it likely meant", "[smoke][config]") {
  CHECK_THROWS_WITH(load_smoke_config(Config::parse("smoke:\n  gemm_repeats: 3\n  gemm_sizze: 4096\n", "c.yaml")),
                    Catch::StartsWith("c.yaml:3: key 'smoke.gemm_sizze'") && Catch::Contains("did you mean 'gemm_sizes'"));
  CHECK_THROWS_WITH(load_smoke_config(Config::parse("smoke:\n  warmup_ms: -5\n", "c.yaml")),
                    Catch::Contains("smoke.warmup_ms") && Catch::Contains("must not be negative"));
}
