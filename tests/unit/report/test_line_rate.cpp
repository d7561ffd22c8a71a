// min_line_rate_fraction (src/thresholds/rule.h) and the fabric rules shipped in generic.yaml:
// each side of every bound.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "thresholds/evaluate.h"
#include "thresholds/threshold_set.h"

using namespace gpuaccept;
namespace fs = std::filesystem;

namespace {

const fs::path kShipped = GPUACCEPT_THRESHOLDS_SOURCE_DIR;

// An nccl-scaling row across nodes as the phase writes it (docs/fabric.md); `line_rate` ""
// leaves the line-rate params out, as on one node or in a file from before issue 37.
Record row(const std::string& test, const std::string& metric, double value, const std::string& bytes,
           const std::string& scale, const std::string& line_rate = "400", const std::string& fabric = "infiniband") {
  Record r;
  r.phase = "nccl-scaling";
  r.rank = kJobLevel;
  r.test = test;
  r.metric = metric;
  r.value = value;
  r.unit = metric == "time" ? "us" : "GB/s";
  r.params = {{"bytes", bytes}, {"dtype", "float"}, {"inplace", "0"}, {"scale", scale}, {"ranks", "2"}};
  if (!line_rate.empty()) {
    r.params["line_rate_gbps"] = line_rate;
    r.params["line_rate_source"] = "ports";
    r.params["fabric"] = fabric;
  }
  return r;
}

Rule line_rate_rule(Severity severity = Severity::Fail) {
  Rule r;
  r.name = "all_reduce_line_rate";
  r.phase = "nccl-scaling";
  r.test = "all_reduce";
  r.metric = "busbw";
  r.where.range["bytes"] = {268435456, std::nullopt};
  r.min_line_rate_fraction = 0.8;
  r.severity = severity;
  r.basis = "busbw near line rate";
  return r;
}

ThresholdSet set_of(Rule r) {
  ThresholdSet t;
  t.rules.push_back(std::move(r));
  return t;
}

// The flagged verdicts of the shipped generic.yaml about `records`, by rule name.
std::vector<std::string> flagged_rules(const std::vector<Record>& records) {
  std::vector<std::string> out;
  for (const auto& v : evaluate(ThresholdSet::load(kShipped / "generic.yaml"), records))
    if (v.flagged()) out.push_back(v.rule.name + " " + std::string(to_string(v.outcome)));
  return out;
}

}  // namespace

TEST_CASE("line rate: busbw above the fraction of the line rate passes, exactly on it too", "[line_rate]") {
  const auto vs = evaluate(set_of(line_rate_rule()),
                           {row("all_reduce", "busbw", 46.0, "268435456", "inter_node"),
                            row("all_reduce", "busbw", 40.0, "1073741824", "all")});
  REQUIRE(vs.size() == 2);
  for (const auto& v : vs) {
    CHECK(v.outcome == RuleOutcome::Pass);
    CHECK(v.check == RuleCheck::LineRate);
    CHECK(v.bound == Approx(40.0));  // 0.8 x 400 Gb/s / 8
    CHECK(v.line_rate_gbps == 400);
  }
}

TEST_CASE("line rate: busbw below the fraction fails, and the message says against what", "[line_rate]") {
  const auto vs = evaluate(set_of(line_rate_rule()), {row("all_reduce", "busbw", 30.0, "268435456", "inter_node")});
  REQUIRE(vs.size() == 1);
  const RuleVerdict& v = vs[0];
  CHECK(v.outcome == RuleOutcome::Fail);
  CHECK(v.measured == 30.0);
  CHECK(v.bound == Approx(40.0));
  CHECK_THAT(v.message, Catch::StartsWith("job: all_reduce 256 MiB"));
  CHECK_THAT(v.message, Catch::Contains("= 30.0 GB/s < 40.0"));
  CHECK_THAT(v.message, Catch::Contains("0.8 x line rate 400 Gb/s = 50.0 GB/s"));
  CHECK_THAT(v.message, Catch::Contains("line rate from ports, fabric infiniband"));
  CHECK_THAT(v.message, Catch::EndsWith("; busbw near line rate)"));
}

TEST_CASE("line rate: a WARN rule warns below the bound", "[line_rate]") {
  const auto vs = evaluate(set_of(line_rate_rule(Severity::Warn)), {row("all_reduce", "busbw", 39.9, "268435456", "all")});
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].outcome == RuleOutcome::Warn);
}

TEST_CASE("line rate: a record without a usable line rate is not judged by the rule", "[line_rate]") {
  Record zero = row("all_reduce", "busbw", 1.0, "268435456", "inter_node", "0");
  Record words = row("all_reduce", "busbw", 1.0, "268435456", "inter_node", "fast");
  const auto vs = evaluate(set_of(line_rate_rule()),
                           {row("all_reduce", "busbw", 1.0, "268435456", "intra_node", ""), zero, words});
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].outcome == RuleOutcome::NoData);
  CHECK_FALSE(vs[0].record);
}

TEST_CASE("line rate: the rule's filters still choose the records", "[line_rate]") {
  const auto vs = evaluate(set_of(line_rate_rule()), {row("all_reduce", "busbw", 1.0, "134217728", "inter_node"),
                                                     row("all_gather", "busbw", 1.0, "268435456", "inter_node")});
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].outcome == RuleOutcome::NoData);
}

TEST_CASE("shipped: busbw across nodes below 80% of the line rate FAILs, from 256 MiB", "[line_rate][thresholds]") {
  for (const char* test : {"all_reduce", "all_gather", "reduce_scatter"}) {
    CAPTURE(test);
    const std::string rule = std::string(test) + "_line_rate FAIL";
    CHECK(flagged_rules({row(test, "busbw", 39.0, "268435456", "inter_node")}) == std::vector<std::string>{rule});
    CHECK(flagged_rules({row(test, "busbw", 79.0, "8589934592", "all", "800")}) == std::vector<std::string>{rule});
    CHECK(flagged_rules({row(test, "busbw", 41.0, "268435456", "inter_node")}).empty());
    CHECK(flagged_rules({row(test, "busbw", 81.0, "8589934592", "all", "800")}).empty());
    // Below 256 MiB, and on one node (no line rate): not judged against the line rate.
    CHECK(flagged_rules({row(test, "busbw", 5.0, "134217728", "inter_node")}).empty());
    CHECK(flagged_rules({row(test, "busbw", 5.0, "268435456", "intra_node", "")}).empty());
  }
}

TEST_CASE("shipped: 8 B all_reduce latency across nodes, one bound per fabric", "[line_rate][thresholds]") {
  CHECK(flagged_rules({row("all_reduce", "time", 51, "8", "inter_node")}) ==
        std::vector<std::string>{"all_reduce_latency_infiniband FAIL"});
  CHECK(flagged_rules({row("all_reduce", "time", 49, "8", "all")}).empty());
  CHECK(flagged_rules({row("all_reduce", "time", 51, "8", "inter_node", "400", "roce")}) ==
        std::vector<std::string>{"all_reduce_latency_roce FAIL"});
  CHECK(flagged_rules({row("all_reduce", "time", 49, "8", "inter_node", "400", "roce")}).empty());
  // Beyond 16 nodes, or at `all`, RDMA's latency is only a warning, at twice the bound.
  Record many = row("all_reduce", "time", 99, "8", "inter_node");
  many.params["ranks"] = "64";
  CHECK(flagged_rules({many}).empty());
  many.value = 101;
  CHECK(flagged_rules({many}) == std::vector<std::string>{"all_reduce_latency_infiniband_any WARN"});
  CHECK(flagged_rules({row("all_reduce", "time", 101, "8", "all")}) ==
        std::vector<std::string>{"all_reduce_latency_infiniband_any WARN"});
  CHECK(flagged_rules({row("all_reduce", "time", 501, "8", "inter_node", "100", "tcp")}) ==
        std::vector<std::string>{"all_reduce_latency_tcp WARN"});
  CHECK(flagged_rules({row("all_reduce", "time", 499, "8", "inter_node", "100", "tcp")}).empty());
  // No RDMA port, fabric not declared: no latency rule (nccl_transport FAILs it instead).
  CHECK(flagged_rules({row("all_reduce", "time", 5000, "8", "inter_node", "3200", "none")}).empty());
  // Another size, or one node: not a latency across nodes.
  CHECK(flagged_rules({row("all_reduce", "time", 500, "16", "inter_node")}).empty());
  CHECK(flagged_rules({row("all_reduce", "time", 500, "8", "intra_node", "")}).empty());
}

TEST_CASE("shipped: training scaling across nodes FAILs below 70% (ddp) and 80% (fsdp-lora)", "[thresholds]") {
  const auto scaling = [](const std::string& phase, double pct, const std::string& to, const std::string& nodes) {
    Record r;
    r.phase = phase;
    r.rank = kJobLevel;
    r.test = "scaling";
    r.metric = "efficiency";
    r.value = pct;
    r.unit = "%";
    r.params = {{"from", "single_gpu"}, {"to", to}, {"gpus", "16"}};
    if (!nodes.empty()) r.params["nodes"] = nodes;
    return r;
  };
  const auto fails = [](const std::vector<std::string>& flagged, const std::string& rule) {
    return std::find(flagged.begin(), flagged.end(), rule + " FAIL") != flagged.end();
  };
  CHECK(fails(flagged_rules({scaling("ddp", 69, "all", "2")}), "ddp_scaling_efficiency_multi_node"));
  CHECK_FALSE(fails(flagged_rules({scaling("ddp", 71, "all", "2")}), "ddp_scaling_efficiency_multi_node"));
  CHECK_FALSE(fails(flagged_rules({scaling("ddp", 60, "all", "1")}), "ddp_scaling_efficiency_multi_node"));
  CHECK_FALSE(fails(flagged_rules({scaling("ddp", 60, "all", "")}), "ddp_scaling_efficiency_multi_node"));
  CHECK_FALSE(fails(flagged_rules({scaling("ddp", 60, "node", "2")}), "ddp_scaling_efficiency_multi_node"));
  CHECK(fails(flagged_rules({scaling("fsdp-lora", 79, "all", "4")}), "fsdp_lora_scaling_efficiency_multi_node"));
  CHECK_FALSE(fails(flagged_rules({scaling("fsdp-lora", 81, "all", "4")}), "fsdp_lora_scaling_efficiency_multi_node"));
  CHECK_FALSE(fails(flagged_rules({scaling("fsdp-lora", 70, "all", "1")}), "fsdp_lora_scaling_efficiency_multi_node"));
  // The WARN rules stay: 75% on two nodes is a ddp WARN (< 80) but no FAIL.
  const auto ddp75 = flagged_rules({scaling("ddp", 75, "all", "2")});
  CHECK(std::find(ddp75.begin(), ddp75.end(), "ddp_scaling_efficiency WARN") != ddp75.end());
  CHECK_FALSE(fails(ddp75, "ddp_scaling_efficiency_multi_node"));
}
