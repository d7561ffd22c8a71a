#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "thresholds/evaluate.h"
#include "thresholds/threshold_selection.h"
#include "thresholds/threshold_set.h"

using namespace gpuaccept;
namespace fs = std::filesystem;

namespace {

const fs::path kShipped = GPUACCEPT_THRESHOLDS_SOURCE_DIR;

// A scratch directory removed at the end of the test.
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("gpuaccept-thresholds-" + std::to_string(::getpid()));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path / name) << text; }
};

}  // namespace

TEST_CASE("every shipped threshold file loads", "[thresholds]") {
  int files = 0;
  for (const auto& e : fs::directory_iterator(kShipped)) {
    INFO(e.path().string());
    const ThresholdSet t = ThresholdSet::load(e.path());
    CHECK_FALSE(t.rules.empty());
    ++files;
  }
  CHECK(files >= 3);
}

TEST_CASE("the model's file extends generic.yaml with absolute bounds", "[thresholds]") {
  const ThresholdSet h200 = ThresholdSet::load(kShipped / "h200-141gb.yaml");
  const ThresholdSet generic = ThresholdSet::load(kShipped / "generic.yaml");
  REQUIRE(h200.rules.size() > generic.rules.size());
  CHECK(h200.rules.front().name == generic.rules.front().name);
  CHECK(std::any_of(h200.rules.begin(), h200.rules.end(), [](const Rule& r) { return r.name == "gemm_bf16_8192" && *r.min == 544 && r.assumes; }));
}

// smoke's sustained GEMM as it records it on each GPU (phases/smoke/sustained.cpp): the params
// name the measurement only, so every GPU of the node is in one fleet.
Record sustained_tflops(int gpu, double tflops) {
  Record r;
  r.phase = "smoke";
  r.rank = gpu;
  r.node = "gpa-node1";
  r.gpu_index = gpu;
  r.test = "sustained_load";
  r.metric = "tflops";
  r.unit = "TFLOP/s";
  r.value = tflops;
  r.params = {{"dtype", "bf16"}, {"seconds", "10"}, {"size", "8192"}};
  return r;
}

TEST_CASE("the shipped sustained_load_fleet rule fails a GPU that cannot hold its clock under load", "[thresholds]") {
  const ThresholdSet generic = ThresholdSet::load(kShipped / "generic.yaml");
  // Four H100s of one machine on 2026-11-26 (694-708 TFLOP/s), then one 12% below the others.
  std::vector<Record> healthy = {sustained_tflops(0, 696.6), sustained_tflops(1, 701.4), sustained_tflops(2, 693.9),
                                 sustained_tflops(3, 708.1)};
  std::vector<Record> one_slow = healthy;
  one_slow[2].value = 617.0;
  const auto judged = [&](const std::vector<Record>& records) {
    std::vector<RuleVerdict> mine;
    for (RuleVerdict& v : evaluate(generic, records))
      if (v.rule.name == "sustained_load_fleet") mine.push_back(std::move(v));
    return mine;
  };
  const std::vector<RuleVerdict> fine = judged(healthy);
  CHECK(fine.size() == 4);
  CHECK(std::none_of(fine.begin(), fine.end(), [](const RuleVerdict& v) { return v.flagged(); }));
  const std::vector<RuleVerdict> slow = judged(one_slow);
  REQUIRE(slow.size() == 4);
  const auto flagged = std::find_if(slow.begin(), slow.end(), [](const RuleVerdict& v) { return v.flagged(); });
  REQUIRE(flagged != slow.end());
  CHECK(flagged->record->gpu_index == 2);
  CHECK(flagged->peers == 3);
  CHECK(std::count_if(slow.begin(), slow.end(), [](const RuleVerdict& v) { return v.flagged(); }) == 1);
}

TEST_CASE("thresholds are chosen by the GPU model in the inventory", "[thresholds]") {
  SECTION("H200") {
    const auto c = select_threshold_file(std::vector<std::string>(8, "NVIDIA H200"), kShipped);
    CHECK(c.file.filename() == "h200-141gb.yaml");
    CHECK(c.model == "NVIDIA H200");
  }
  SECTION("H100 SXM, whatever the case") {
    const auto c = select_threshold_file({"nvidia h100 80gb hbm3"}, kShipped);
    CHECK(c.file.filename() == "h100-sxm-80gb.yaml");
  }
  SECTION("a mixed fleet is judged by its most common model") {
    const auto c = select_threshold_file({"NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA H200"}, kShipped);
    CHECK(c.file.filename() == "h200-141gb.yaml");
    CHECK_THAT(c.reason, Catch::Contains("most common of 2 models"));
  }
  SECTION("an unknown model falls back to generic.yaml and says so") {
    const auto c = select_threshold_file({"NVIDIA A100-SXM4-80GB"}, kShipped);
    CHECK(c.file.filename() == "generic.yaml");
    CHECK(c.model.empty());
    CHECK_THAT(c.reason, Catch::Contains("NVIDIA A100-SXM4-80GB") && Catch::Contains("no thresholds file"));
  }
  SECTION("no GPU at all falls back to generic.yaml") {
    const auto c = select_threshold_file({}, kShipped);
    CHECK(c.file.filename() == "generic.yaml");
    CHECK_THAT(c.reason, Catch::Contains("no GPU found"));
  }
}

TEST_CASE("a malformed file in the thresholds directory is reported, not skipped", "[thresholds]") {
  ScratchDir dir;
  dir.write("generic.yaml", "rules:\n  - {name: a, phase: p, test: t, max: 0, basis: b, severity: FAIL}\n");
  dir.write("broken.yaml", "models: [NVIDIA H200]\nrules:\n  - {name: a, phase: p, test: t, max: lots, basis: b, severity: FAIL}\n");
  CHECK_THROWS_WITH(select_threshold_file({"NVIDIA H200"}, dir.path),
                    Catch::Contains("broken.yaml:3: key 'rules[0].max': expected a number, got 'lots'"));
}

TEST_CASE("a thresholds directory without generic.yaml cannot fall back", "[thresholds]") {
  ScratchDir dir;
  CHECK_THROWS_AS(select_threshold_file({"NVIDIA B200"}, dir.path), InputError);
}

TEST_CASE("extends refuses a cycle", "[thresholds]") {
  ScratchDir dir;
  dir.write("a.yaml", "extends: b.yaml\nrules: []\n");
  dir.write("b.yaml", "extends: a.yaml\nrules: []\n");
  CHECK_THROWS_WITH(ThresholdSet::load(dir.path / "a.yaml"), Catch::Contains("key 'extends'") && Catch::Contains("extends itself"));
}

TEST_CASE("extends names its key when the filesystem refuses the name", "[thresholds]") {
  // Fuzzing (2026-11-26): a 2 kB name made std::filesystem throw "File name too long" from
  // exists(), an error that named neither the file nor the key.
  ScratchDir dir;
  dir.write("long.yaml", "extends: " + std::string(5000, 'g') + ".yaml\nrules: []\n");
  CHECK_THROWS_WITH(ThresholdSet::load(dir.path / "long.yaml"),
                    Catch::Contains("long.yaml") && Catch::Contains("key 'extends'") && Catch::Contains("too long"));
  dir.write("plain.yaml", "rules: []\n");
  dir.write("through_a_file.yaml", "extends: plain.yaml/generic.yaml\nrules: []\n");
  CHECK_THROWS_WITH(ThresholdSet::load(dir.path / "through_a_file.yaml"),
                    Catch::Contains("key 'extends'") && Catch::Contains("does not exist"));
  dir.write("directory.yaml", "extends: .\nrules: []\n");
  CHECK_THROWS_WITH(ThresholdSet::load(dir.path / "directory.yaml"),
                    Catch::Contains("key 'extends'") && Catch::Contains("is not a file"));
}
