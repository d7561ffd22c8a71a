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
