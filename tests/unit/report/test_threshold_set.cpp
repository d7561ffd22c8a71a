#include <catch2/catch.hpp>

#include "common/error.h"
#include "thresholds/threshold_set.h"

using namespace gpuaccept;

namespace {

const char* kValid = R"(description: test
models: [NVIDIA H200]
rules:
  - name: gemm_bf16
    phase: smoke
    test: gemm
    metric: tflops
    where: {dtype: bf16, m: 8192, bytes: {min: 1024, max: 2048}}
    min: 711  # 90% of 790 measured
    basis: "90% of 790"
    fleet_below_median_pct: 10
    severity: FAIL
  - name: latency
    phase: smoke
    test: peer_latency
    fleet_above_median_pct: 25
    severity: WARN
gpu: {sku: NVIDIA H200 SXM 141GB, form_factor: SXM, power_limit_w: 700}
)";

// The InputError message of parsing `text` as "t.yaml".
std::string error_of(const std::string& text) {
  try {
    ThresholdSet::parse(text, "t.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string rule_yaml(const std::string& bound_lines) {
  return "description: t\nmodels: []\nrules:\n  - name: lr\n    phase: nccl-scaling\n    test: all_reduce\n" + bound_lines +
         "    severity: FAIL\n";
}

}  // namespace

TEST_CASE("a threshold file is read into rules with filters and bounds", "[thresholds]") {
  const ThresholdSet t = ThresholdSet::parse(kValid, "t.yaml");
  REQUIRE(t.rules.size() == 2);
  const Rule& r = t.rules[0];
  CHECK(r.name == "gemm_bf16");
  CHECK(r.origin == "t.yaml:4");
  CHECK(r.where.equal.at("dtype") == "bf16");
  CHECK(r.where.equal.at("m") == "8192");
  CHECK(*r.where.range.at("bytes").min == 1024);
  CHECK(*r.where.range.at("bytes").max == 2048);
  CHECK(*r.min == 711);
  CHECK_FALSE(r.max);
  CHECK(*r.fleet_below_median_pct == 10);
  CHECK(r.severity == Severity::Fail);
  CHECK(t.rules[1].severity == Severity::Warn);
  CHECK(t.rules[1].metric.empty());
}

TEST_CASE("a model's floors carry the GPU they were measured on", "[thresholds]") {
  const ThresholdSet t = ThresholdSet::parse(kValid, "t.yaml");
  REQUIRE(t.gpu);
  REQUIRE(t.rules[0].assumes);
  const GpuAssumption& a = *t.rules[0].assumes;
  CHECK(a.sku == "NVIDIA H200 SXM 141GB");
  CHECK(a.models == std::vector<std::string>{"NVIDIA H200"});
  CHECK(a.form_factor == "SXM");
  CHECK(a.power_limit_w == 700);
  CHECK(a.describe() == "NVIDIA H200 SXM 141GB (SXM, power limit >= 700 W)");
  CHECK_FALSE(t.rules[1].assumes);  // a fleet rule assumes nothing: it compares like with like

  // A floor in a model's file without `gpu:` is refused: it would judge every board alike.
  std::string no_gpu = kValid;
  no_gpu.erase(no_gpu.find("gpu: {"));
  CHECK_THAT(error_of(no_gpu), Catch::StartsWith("t.yaml:4: key 'rules[0].min': a floor in a model's file needs"));
  std::string bad_form = kValid;
  bad_form.replace(bad_form.find("form_factor: SXM"), 16, "form_factor: OAM");
  CHECK_THAT(error_of(bad_form), Catch::Contains("key 'gpu.form_factor': expected SXM, PCIe or NVL, got 'OAM'"));
  std::string no_watts = kValid;
  no_watts.replace(no_watts.find(", power_limit_w: 700"), 20, "");
  CHECK_THAT(error_of(no_watts), Catch::Contains("key 'gpu.power_limit_w': missing"));
  CHECK_THAT(error_of("gpu: {sku: x, form_factor: SXM, power_limit_w: 700}\nrules:\n  - {name: a, phase: p, test: t, "
                      "max: 1, basis: b, severity: FAIL}\n"),
             Catch::Contains("key 'gpu': a file without `models:` is for no GPU in particular"));
}

TEST_CASE("the shipped model files say what every floor assumes", "[thresholds]") {
  for (const char* file : {"h100-sxm-80gb.yaml", "h200-141gb.yaml"}) {
    INFO(file);
    const ThresholdSet t = ThresholdSet::load(std::string(GPUACCEPT_THRESHOLDS_SOURCE_DIR) + "/" + file);
    REQUIRE(t.gpu);
    CHECK(t.gpu->form_factor == "SXM");
    CHECK(t.gpu->power_limit_w == 700);
    int floors = 0;
    for (const Rule& r : t.rules) {
      if (!r.min || r.origin.find(file) == std::string::npos) continue;  // generic.yaml's are policies
      CHECK(r.assumes);
      ++floors;
    }
    CHECK(floors >= 2);
  }
}

TEST_CASE("GPU models match case-insensitively but not by prefix", "[thresholds]") {
  const ThresholdSet t = ThresholdSet::parse(kValid, "t.yaml");
  CHECK(t.applies_to_model("NVIDIA H200"));
  CHECK(t.applies_to_model("  nvidia h200 "));
  CHECK_FALSE(t.applies_to_model("NVIDIA H200 NVL"));
  CHECK_FALSE(t.applies_to_model("NVIDIA H100 80GB HBM3"));
}

TEST_CASE("a malformed threshold file names file, line and key", "[thresholds]") {
  SECTION("a bound that is not a number") {
    std::string text = kValid;
    text.replace(text.find("min: 711"), 8, "min: fast");
    CHECK(error_of(text) == "t.yaml:9: key 'rules[0].min': expected a number, got 'fast'");
  }
  SECTION("a misspelt key in a rule") {
    std::string text = kValid;
    text.replace(text.find("severity: WARN"), 8, "sevrity");
    CHECK_THAT(error_of(text), Catch::StartsWith("t.yaml:17: key 'rules[1].sevrity': unknown key"));
  }
  SECTION("a misspelt key at the top") {
    CHECK_THAT(error_of(std::string("modells: []\n") + kValid), Catch::StartsWith("t.yaml:1: key 'modells': unknown key"));
  }
  SECTION("a misspelt key in a range") {
    std::string text = kValid;
    text.replace(text.find("max: 2048"), 3, "mx");
    CHECK_THAT(error_of(text), Catch::StartsWith("t.yaml:8: key 'rules[0].where.bytes.mx': unknown key"));
  }
  SECTION("an unknown severity") {
    std::string text = kValid;
    text.replace(text.find("severity: FAIL"), 14, "severity: FATAL");
    CHECK(error_of(text) == "t.yaml:12: key 'rules[0].severity': expected FAIL or WARN, got 'FATAL'");
  }
  SECTION("an absolute bound without its basis") {
    std::string text = kValid;
    text.erase(text.find("    basis:"), std::string("    basis: \"90% of 790\"\n").size());
    CHECK_THAT(error_of(text), Catch::StartsWith("t.yaml:4: key 'rules[0].basis': missing"));
  }
  SECTION("a rule without any bound") {
    CHECK_THAT(error_of("rules:\n  - {name: a, phase: smoke, test: gemm, severity: FAIL}\n"),
               Catch::StartsWith("t.yaml:2: key 'rules[0]': no bound"));
  }
  SECTION("a missing test") {
    CHECK_THAT(error_of("rules:\n  - {name: a, phase: smoke, max: 1, basis: b, severity: FAIL}\n"),
               Catch::StartsWith("t.yaml:2: key 'rules[0].test': missing"));
  }
  SECTION("a percentage out of range") {
    CHECK_THAT(error_of("rules:\n  - {name: a, phase: p, test: t, fleet_below_median_pct: 150, severity: FAIL}\n"),
               Catch::StartsWith("t.yaml:2: key 'rules[0].fleet_below_median_pct': expected a percentage"));
  }
  SECTION("a rule name used twice") {
    CHECK_THAT(error_of("rules:\n  - {name: a, phase: p, test: t, max: 1, basis: b, severity: FAIL}\n"
                        "  - {name: a, phase: p, test: u, max: 1, basis: b, severity: FAIL}\n"),
               Catch::StartsWith("t.yaml:3: key 'rules[1].name': rule name 'a' is already used at t.yaml:2"));
  }
  SECTION("rules that are not a list") {
    CHECK(error_of("rules: {a: 1}\n") == "t.yaml:1: key 'rules': expected a list of rules");
  }
  SECTION("not YAML at all") {
    CHECK_THAT(error_of("rules: [\n"), Catch::StartsWith("t.yaml:"));
  }
}

TEST_CASE("line rate: a threshold file reads min_line_rate_fraction and refuses a bad one", "[thresholds][line_rate]") {
  const ThresholdSet t = ThresholdSet::parse(rule_yaml("    min_line_rate_fraction: 0.8\n    basis: \"why\"\n"), "t.yaml");
  REQUIRE(t.rules.size() == 1);
  CHECK(*t.rules[0].min_line_rate_fraction == 0.8);
  CHECK_FALSE(t.rules[0].min);
  CHECK(ThresholdSet::parse(rule_yaml("    min_line_rate_fraction: 1\n    basis: \"why\"\n"), "t.yaml")
            .rules[0]
            .min_line_rate_fraction == 1.0);
  CHECK_THAT(error_of(rule_yaml("    min_line_rate_fraction: 1.5\n    basis: \"why\"\n")),
             Catch::Contains("t.yaml:7: key 'rules[0].min_line_rate_fraction': expected a fraction in (0, 1], got 1.5"));
  CHECK_THAT(error_of(rule_yaml("    min_line_rate_fraction: 0\n    basis: \"why\"\n")),
             Catch::Contains("expected a fraction in (0, 1], got 0"));
  CHECK_THAT(error_of(rule_yaml("    min_line_rate_fraction: most\n    basis: \"why\"\n")),
             Catch::Contains("key 'rules[0].min_line_rate_fraction'"));
  CHECK_THAT(error_of(rule_yaml("    min_line_rate_fraction: 0.8\n")),
             Catch::Contains("key 'rules[0].basis': missing: a rule with min, max or min_line_rate_fraction"));
}
