#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "thresholds/evaluate.h"

using namespace gpuaccept;

namespace {

Record gemm(const std::string& node, int gpu, double tflops, const std::string& dtype = "bf16") {
  Record r;
  r.phase = "smoke";
  r.rank = gpu;
  r.node = node;
  r.gpu_index = gpu;
  r.test = "gemm";
  r.metric = "tflops";
  r.value = tflops;
  r.unit = "TFLOP/s";
  r.params = {{"dtype", dtype}, {"m", "8192"}, {"n", "8192"}, {"k", "8192"}};
  return r;
}

Record busbw(const std::string& node, double bytes, double value) {
  Record r;
  r.phase = "nccl-scaling";
  r.rank = -1;
  r.node = node;
  r.test = "all_reduce";
  r.metric = "busbw";
  r.value = value;
  r.unit = "GB/s";
  r.params = {{"bytes", fmt::format("{:.0f}", bytes)}, {"scale", "intra_node"}};
  return r;
}

Rule gemm_rule() {
  Rule r;
  r.name = "gemm_bf16";
  r.phase = "smoke";
  r.test = "gemm";
  r.metric = "tflops";
  r.where.equal = {{"dtype", "bf16"}};
  r.severity = Severity::Fail;
  r.basis = "90% of 790 measured on 8xH200 2026-10-28";
  return r;
}

ThresholdSet set_of(Rule r) {
  ThresholdSet t;
  t.rules.push_back(std::move(r));
  return t;
}

std::vector<Record> fleet_of_8(double slow_value) {
  std::vector<Record> out;
  for (int gpu = 0; gpu < 8; ++gpu) out.push_back(gemm("gpa-node2", gpu, gpu == 3 ? slow_value : 800.0));
  return out;
}

int count(const std::vector<RuleVerdict>& vs, RuleOutcome o) {
  return static_cast<int>(std::count_if(vs.begin(), vs.end(), [&](const auto& v) { return v.outcome == o; }));
}

}  // namespace

TEST_CASE("an absolute minimum fails the record below it", "[evaluate]") {
  Rule rule = gemm_rule();
  rule.min = 711;
  const auto vs = evaluate(set_of(rule), {gemm("gpa-node2", 3, 612.0), gemm("gpa-node2", 4, 711.0)});
  REQUIRE(vs.size() == 2);
  CHECK(vs[0].outcome == RuleOutcome::Fail);
  CHECK(vs[0].check == RuleCheck::Min);
  CHECK(vs[0].measured == 612.0);
  CHECK(vs[0].bound == 711);
  CHECK(vs[0].message ==
        "gpa-node2 GPU 3: gemm bf16 8192^3 = 612.0 TFLOP/s < 711 (90% of 790 measured on 8xH200 2026-10-28)");
  CHECK(vs[1].outcome == RuleOutcome::Pass);  // exactly on the bound passes
}

TEST_CASE("an absolute maximum flags the record above it with the rule's severity", "[evaluate]") {
  Rule rule;
  rule.name = "latency";
  rule.phase = "smoke";
  rule.test = "peer_latency";
  rule.max = 10;
  rule.basis = "policy";
  rule.severity = Severity::Warn;
  Record fast, slow;
  fast.phase = slow.phase = "smoke";
  fast.test = slow.test = "peer_latency";
  fast.metric = slow.metric = "latency";
  fast.value = 3;
  slow.value = 12.5;
  const auto vs = evaluate(set_of(rule), {fast, slow});
  REQUIRE(vs.size() == 2);
  CHECK(vs[0].outcome == RuleOutcome::Pass);
  CHECK(vs[1].outcome == RuleOutcome::Warn);
  CHECK(vs[1].check == RuleCheck::Max);
  CHECK_THAT(vs[1].message, Catch::Contains("= 12.5") && Catch::Contains("> 10"));
}

TEST_CASE("the fleet rule flags one slow GPU among 8 although it clears the absolute bound", "[evaluate]") {
  Rule rule = gemm_rule();
  rule.min = 711;
  rule.fleet_below_median_pct = 10;
  const auto vs = evaluate(set_of(rule), fleet_of_8(712.0));  // 11% below 800, above 711
  REQUIRE(vs.size() == 16);
  CHECK(count(vs, RuleOutcome::Fail) == 1);
  const auto flagged = std::find_if(vs.begin(), vs.end(), [](const auto& v) { return v.flagged(); });
  CHECK(flagged->check == RuleCheck::FleetBelow);
  CHECK(flagged->record->gpu_index == 3);
  CHECK(flagged->fleet_median == 800.0);
  CHECK(flagged->peers == 7);
  CHECK(flagged->bound == Approx(720.0));
  CHECK_THAT(flagged->message, Catch::Contains("11.0% below the median 800.0 of 7 peers"));
}

TEST_CASE("a flagged outlier's verdict quotes its record's own message, a GPU within its fleet's does not", "[evaluate]") {
  Rule rule = gemm_rule();
  rule.fleet_below_median_pct = 10;
  std::vector<Record> fleet = fleet_of_8(700.0);  // GPU 3, 12.5% below
  for (Record& r : fleet)
    r.message = r.gpu_index == 3 ? "this GPU over the 10 timed steps: SM clock 1005-1410 MHz (median 1110), "
                                   "clock-event reasons: hw_slowdown in 12 of 12 samples"
                                 : "this GPU over the 10 timed steps: SM clock 1695-1980 MHz (median 1755)";
  const auto vs = evaluate(set_of(rule), fleet);
  const auto flagged = std::find_if(vs.begin(), vs.end(), [](const auto& v) { return v.flagged(); });
  REQUIRE(flagged != vs.end());
  CHECK_THAT(flagged->message, Catch::Contains("12.5% below the median 800.0 of 7 peers") &&
                                   Catch::Contains("; its record: this GPU over the 10 timed steps") &&
                                   Catch::Contains("hw_slowdown in 12 of 12 samples"));
  for (const auto& v : vs)
    if (!v.flagged()) CHECK_THAT(v.message, !Catch::Contains("its record"));
}

TEST_CASE("the fleet rule flags nothing when all GPUs are equal", "[evaluate]") {
  Rule rule = gemm_rule();
  rule.fleet_below_median_pct = 10;
  const auto vs = evaluate(set_of(rule), fleet_of_8(800.0));
  CHECK(vs.size() == 8);
  CHECK(count(vs, RuleOutcome::Pass) == 8);
}

TEST_CASE("a fleet of one is not compared", "[evaluate]") {
  Rule rule = gemm_rule();
  rule.fleet_below_median_pct = 10;
  const auto vs = evaluate(set_of(rule), {gemm("gpa-node1", 0, 100.0)});
  CHECK(vs.empty());
}

TEST_CASE("peers share params: GPUs with another dtype are not a fleet", "[evaluate]") {
  Rule rule = gemm_rule();
  rule.where.equal.clear();  // every dtype
  rule.fleet_below_median_pct = 10;
  const auto vs = evaluate(set_of(rule), {gemm("n1", 0, 800, "bf16"), gemm("n1", 1, 800, "bf16"),
                                          gemm("n1", 0, 400, "fp32"), gemm("n1", 1, 400, "fp32")});
  CHECK(vs.size() == 4);
  CHECK(count(vs, RuleOutcome::Pass) == 4);
}

TEST_CASE("fleet_above_median_pct flags a value too high for a lower-is-better metric", "[evaluate]") {
  Rule rule;
  rule.name = "latency_fleet";
  rule.phase = "smoke";
  rule.test = "peer_latency";
  rule.fleet_above_median_pct = 25;
  rule.severity = Severity::Warn;
  std::vector<Record> rs(4);
  for (int i = 0; i < 4; ++i) {
    rs[i].phase = "smoke";
    rs[i].test = "peer_latency";
    rs[i].node = "n" + std::to_string(i);
    rs[i].value = i == 2 ? 14.0 : 10.0;
  }
  const auto vs = evaluate(set_of(rule), rs);
  REQUIRE(vs.size() == 4);
  CHECK(vs[2].outcome == RuleOutcome::Warn);
  CHECK(vs[2].check == RuleCheck::FleetAbove);
  CHECK(count(vs, RuleOutcome::Pass) == 3);
}

TEST_CASE("a dtype filter ignores records of other dtypes", "[evaluate]") {
  Rule rule = gemm_rule();
  rule.min = 711;
  const auto vs = evaluate(set_of(rule), {gemm("n1", 0, 300.0, "fp16"), gemm("n1", 0, 800.0, "bf16")});
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].record->params.at("dtype") == "bf16");
  CHECK(vs[0].outcome == RuleOutcome::Pass);
}

TEST_CASE("a byte range selects message sizes inclusively", "[evaluate]") {
  Rule rule;
  rule.name = "all_reduce_512m";
  rule.phase = "nccl-scaling";
  rule.test = "all_reduce";
  rule.metric = "busbw";
  rule.where.range["bytes"] = {512.0 * (1 << 20), 4.0 * (1 << 30)};
  rule.min = 319.5;
  rule.basis = "90% of 355";
  const auto vs = evaluate(set_of(rule), {busbw("n1", 256.0 * (1 << 20), 100), busbw("n1", 512.0 * (1 << 20), 300),
                                          busbw("n1", 4.0 * (1 << 30), 350), busbw("n1", 8.0 * (1 << 30), 100)});
  REQUIRE(vs.size() == 2);
  CHECK(vs[0].outcome == RuleOutcome::Fail);
  CHECK_THAT(vs[0].message, Catch::Contains("all_reduce 512 MiB intra_node = 300.0 GB/s < 319.5"));
  CHECK(vs[1].outcome == RuleOutcome::Pass);
}

TEST_CASE("SKIP records and records without a value are not judged", "[evaluate]") {
  Rule rule = gemm_rule();
  rule.min = 711;
  Record skipped = gemm("n1", 0, NAN);
  skipped.status = Status::Skip;
  const auto vs = evaluate(set_of(rule), {skipped});
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].outcome == RuleOutcome::NoData);
  CHECK_FALSE(vs[0].record);
  CHECK_THAT(vs[0].message, Catch::Contains("no smoke gemm tflops record"));
}

namespace {

std::shared_ptr<const GpuAssumption> h200_sxm() {
  GpuAssumption a;
  a.sku = "NVIDIA H200 SXM 141GB";
  a.models = {"NVIDIA H200"};
  a.form_factor = "SXM";
  a.power_limit_w = 700;
  return std::make_shared<const GpuAssumption>(a);
}

GpuFactsIndex node_of_8(double gpu3_watts, const std::string& gpu5_form = "SXM") {
  GpuFactsIndex gpus;
  for (int g = 0; g < 8; ++g)
    gpus.add("gpa-node2", g, {"NVIDIA H200", g == 5 ? gpu5_form : "SXM", g == 3 ? gpu3_watts : 700.0});
  return gpus;
}

}  // namespace

TEST_CASE("a floor judges only the GPUs NVML reported as the ones it assumes (issue 39)", "[evaluate]") {
  Rule rule = gemm_rule();
  rule.min = 544;
  rule.assumes = h200_sxm();
  const std::vector<Record> recs = {gemm("gpa-node2", 3, 500.0), gemm("gpa-node2", 4, 500.0), gemm("gpa-node2", 5, 500.0)};

  // GPU 3 capped to 500 W, GPU 5 a PCIe card: not held to the floor; GPU 4 is.
  auto vs = evaluate(set_of(rule), recs, node_of_8(500, "PCIe"));
  REQUIRE(vs.size() == 3);
  CHECK(vs[0].outcome == RuleOutcome::NotApplied);
  CHECK(vs[0].not_applied_because == "the GPU's power limit is 500 W, the floor assumes 700 W");
  CHECK_THAT(vs[0].message, Catch::Contains("floor 544 not applied") && Catch::Contains("the fleet rules judge it"));
  CHECK(vs[1].outcome == RuleOutcome::Fail);
  CHECK_THAT(vs[1].message, Catch::EndsWith("; for NVIDIA H200 SXM 141GB (SXM, power limit >= 700 W))"));
  CHECK(vs[2].outcome == RuleOutcome::NotApplied);
  CHECK(vs[2].not_applied_because == "the GPU is a PCIe board, the floor assumes SXM");

  // What NVML did not report, the floor does not assume.
  GpuFactsIndex unknown;
  unknown.add("gpa-node2", 4, {"NVIDIA H200", "", 700.0});
  unknown.add("gpa-node2", 5, {"NVIDIA H200", "SXM", std::nullopt});
  vs = evaluate(set_of(rule), recs, unknown);
  CHECK(vs[0].not_applied_because == "discover's inventory has no NVML facts for its GPUs");
  CHECK(vs[1].not_applied_because == "NVML did not report the GPU's form factor (SXM assumed)");
  CHECK(vs[2].not_applied_because == "NVML did not report the GPU's power limit (700 W assumed)");
  CHECK(count(evaluate(set_of(rule), recs), RuleOutcome::NotApplied) == 3);  // no inventory at all

  // Another model of the same file's family is not this SKU.
  GpuFactsIndex nvl;
  nvl.add("gpa-node2", 4, {"NVIDIA H200 NVL", "NVL", 600.0});
  CHECK(evaluate(set_of(rule), {recs[1]}, nvl)[0].not_applied_because ==
        "the GPU is a 'NVIDIA H200 NVL', not NVIDIA H200 SXM 141GB");
}

TEST_CASE("a node's or the job's floor holds only where every GPU it covers meets the assumption", "[evaluate]") {
  Rule rule;
  rule.name = "all_reduce_8gpu";
  rule.phase = "nccl-scaling";
  rule.test = "all_reduce";
  rule.metric = "busbw";
  rule.min = 330;
  rule.basis = "90% of 366.7";
  rule.assumes = h200_sxm();
  const Record node = busbw("gpa-node2", 8589934592.0, 300);
  CHECK(evaluate(set_of(rule), {node}, node_of_8(700))[0].outcome == RuleOutcome::Fail);
  CHECK(evaluate(set_of(rule), {node}, node_of_8(450))[0].outcome == RuleOutcome::NotApplied);
  Record job = node;
  job.node.clear();
  GpuFactsIndex two_nodes = node_of_8(700);
  two_nodes.add("gpa-node1", 0, {"NVIDIA H200", "SXM", 400.0});
  CHECK(evaluate(set_of(rule), {job}, two_nodes)[0].outcome == RuleOutcome::NotApplied);
  // A maximum or a fleet rule assumes nothing of the GPU: judged whatever NVML said.
  Rule cap = rule;
  cap.min.reset();
  cap.max = 100;
  CHECK(evaluate(set_of(cap), {node}, GpuFactsIndex{})[0].outcome == RuleOutcome::Fail);
}

namespace {

// Rank 0's record of ddp's tokens/s per GPU at the `all` scale, as phases/ddp/run_summary.cpp writes it.
Record ddp_tokens(int gpus, double value, const std::string& model = "gpt2_124m") {
  Record r;
  r.phase = "ddp";
  r.rank = -1;
  r.test = "throughput";
  r.metric = "tokens_per_s_per_gpu";
  r.value = value;
  r.unit = "tokens/s";
  r.params = {{"scale", "all"}, {"gpus", std::to_string(gpus)}, {"model", model}, {"micro_batch", "16"}, {"seq_len", "1024"}};
  return r;
}

// The verdicts of rule `name` on a record (NoData verdicts, which have none, left out).
std::vector<RuleVerdict> judged_by(const std::vector<RuleVerdict>& vs, const std::string& name) {
  std::vector<RuleVerdict> out;
  for (const RuleVerdict& v : vs)
    if (v.rule.name == name && v.record) out.push_back(v);
  return out;
}

}  // namespace

TEST_CASE("the shipped H200 floors judge ddp's GPT-2 124M at its shape and leave another model alone", "[evaluate]") {
  const ThresholdSet h200 = ThresholdSet::load(std::string(GPUACCEPT_THRESHOLDS_SOURCE_DIR) + "/h200-141gb.yaml");
  const GpuFactsIndex gpus = node_of_8(700);
  // One H200 alone: 90% of 567.0k, the slowest of six healthy runs (the rule's basis).
  auto one = judged_by(evaluate(h200, {ddp_tokens(1, 510300)}, gpus), "ddp_tokens_per_gpu_1gpu");
  REQUIRE(one.size() == 1);
  CHECK(one[0].outcome == RuleOutcome::Pass);
  one = judged_by(evaluate(h200, {ddp_tokens(1, 497900)}, gpus), "ddp_tokens_per_gpu_1gpu");  // the old floor's basis
  REQUIRE(one.size() == 1);
  CHECK(one[0].outcome == RuleOutcome::Warn);
  CHECK_THAT(one[0].message, Catch::Contains("90% of 567.0k tokens/s"));
  // Two and four H200s, each side of its floor.
  CHECK(judged_by(evaluate(h200, {ddp_tokens(2, 492400)}, gpus), "ddp_tokens_per_gpu_2gpu")[0].outcome == RuleOutcome::Pass);
  CHECK(judged_by(evaluate(h200, {ddp_tokens(2, 492300)}, gpus), "ddp_tokens_per_gpu_2gpu")[0].outcome == RuleOutcome::Warn);
  CHECK(judged_by(evaluate(h200, {ddp_tokens(4, 495200)}, gpus), "ddp_tokens_per_gpu_4gpu")[0].outcome == RuleOutcome::Pass);
  CHECK(judged_by(evaluate(h200, {ddp_tokens(4, 495100)}, gpus), "ddp_tokens_per_gpu_4gpu")[0].outcome == RuleOutcome::Warn);
  // A larger model is slower by nature: no floor of GPT-2 124M's judges it.
  CHECK(judged_by(evaluate(h200, {ddp_tokens(1, 200000, "gpt2_350m")}, gpus), "ddp_tokens_per_gpu_1gpu").empty());
}
