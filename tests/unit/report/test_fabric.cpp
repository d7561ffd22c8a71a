// The report's view of the fabric (model/fabric.h): the slowest node pair named in failures
// across nodes, bad ports and risen counters draining their node, the Fabric section's HTML
// (escaped) and summary.json's "fabric".
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "html/html_sections.h"
#include "model/report.h"
#include "model/slowest_pair.h"
#include "output/drain_files.h"
#include "output/summary_json.h"
#include "thresholds/threshold_set.h"

using namespace gpuaccept;
using namespace gpuaccept::report;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kShipped = GPUACCEPT_THRESHOLDS_SOURCE_DIR;

Record busbw(double value, const std::string& scale, const std::string& bytes = "268435456") {
  Record r;
  r.phase = "nccl-scaling";
  r.rank = kJobLevel;
  r.test = "all_reduce";
  r.metric = "busbw";
  r.value = value;
  r.unit = "GB/s";
  r.params = {{"bytes", bytes}, {"dtype", "float"}, {"inplace", "0"}, {"scale", scale}, {"ranks", "2"}};
  if (scale != "intra_node")
    r.params.insert({{"line_rate_gbps", "400"}, {"line_rate_source", "ports"}, {"fabric", "infiniband"}});
  return r;
}

Record pair(const std::string& a, const std::string& b, double value) {
  Record r;
  r.phase = "nccl-scaling";
  r.rank = kJobLevel;
  r.test = "pair_busbw";
  r.metric = "busbw";
  r.value = value;
  r.unit = "GB/s";
  r.params = {{"scale", "node_pair"}, {"a", a}, {"b", b}, {"bytes", "268435456"}, {"dtype", "float"}, {"ranks", "16"}};
  return r;
}

Record node_check(const std::string& phase, const std::string& test, const std::string& node, Status s,
                  const std::string& message) {
  Record r;
  r.phase = phase;
  r.rank = kJobLevel;
  r.node = node;
  r.test = test;
  r.status = s;
  r.message = message;
  return r;
}

Record gemm(const std::string& node) {
  Record r;
  r.phase = "smoke";
  r.rank = 0;
  r.node = node;
  r.gpu_index = 0;
  r.test = "gemm";
  r.metric = "tflops";
  r.value = 800;
  r.unit = "TFLOP/s";
  r.params = {{"dtype", "bf16"}};
  return r;
}

std::string counters_doc(const std::string& host, const std::string& phase, std::uint64_t start, std::uint64_t end,
                         const std::string& device = "mlx5_0") {
  const std::string port = device + "/1";
  return json{{"host", host},
              {"phase", phase},
              {"start", {{port, {{"symbol_error", start}}}}},
              {"end", {{port, {{"symbol_error", end}}}}}}
      .dump();
}

std::string inventory_doc(const std::string& host, const std::string& device) {
  return json{{"host", host},
              {"infiniband",
               json::array({{{"device", device},
                             {"port", 1},
                             {"state", "4: ACTIVE"},
                             {"phys_state", "5: LinkUp"},
                             {"rate", "400 Gb/sec (4X NDR)"},
                             {"rate_gbps", 400},
                             {"link_layer", "InfiniBand"},
                             {"pci_bus_id", "0000:18:00.0"},
                             {"numa_node", 0},
                             {"netdevs", json::array({"ibp24s0"})},
                             {"nearest_gpus", json::array({0})},
                             {"gpu_distance", "PIX"},
                             {"active", true}}})},
              {"gpudirect", {{"peermem", true}, {"dmabuf", false}, {"possible", true}, {"detail", "nvidia_peermem loaded"}}}}
      .dump();
}

PhaseSource source(const std::string& phase, const std::string& doc_name, std::vector<std::string> docs) {
  PhaseSource s;
  s.phase = phase;
  s.path = "/results/run/" + phase + ".h5";
  s.documents[doc_name] = std::move(docs);
  return s;
}

// A report of `records` and `sources`, judged by the shipped generic.yaml.
Report report_of(std::vector<Record> records, std::vector<PhaseSource> sources = {},
                 std::vector<std::string> hosts = {}) {
  LoadedRun run;
  run.dir = "/results/run";
  run.records = std::move(records);
  run.sources = std::move(sources);
  InventoryTable inventory;
  for (const auto& h : hosts) inventory.nodes.push_back({h, 1, {}, {}});
  return build_report(run, std::move(inventory), ThresholdSet::load(kShipped / "generic.yaml"), ThresholdChoice{}, nullptr);
}

const RuleVerdict& verdict_of(const Report& r, const std::string& rule, const std::string& scale) {
  const auto it = std::find_if(r.verdicts.begin(), r.verdicts.end(), [&](const RuleVerdict& v) {
    return v.rule.name == rule && v.record && v.record->params.at("scale") == scale;
  });
  REQUIRE(it != r.verdicts.end());
  return *it;
}

std::vector<std::string> names(const std::vector<NodeAction>& list) {
  std::vector<std::string> out;
  for (const auto& a : list) out.push_back(a.node);
  return out;
}

}  // namespace

TEST_CASE("slowest pair: a FAIL across nodes names the slowest node pair of the run", "[fabric]") {
  const Report r = report_of({busbw(30, "inter_node"), busbw(39, "all", "1073741824"), pair("gpa-node1", "gpa-node2", 45),
                              pair("gpa-node2", "gpa-node3", 21.5), pair("gpa-node1", "gpa-node3", 44)});
  for (const char* scale : {"inter_node", "all"}) {
    const RuleVerdict& v = verdict_of(r, "all_reduce_line_rate", scale);
    CHECK(v.outcome == RuleOutcome::Fail);
    CHECK_THAT(v.message, Catch::EndsWith("; slowest node pair: gpa-node2 - gpa-node3 21.5 GB/s (pair_busbw 256 MiB)"));
  }
  REQUIRE(r.fabric.slowest_pair);
  CHECK(r.fabric.slowest_pair->params.at("a") == "gpa-node2");
}

TEST_CASE("slowest pair: a pass, or a run without node pairs, leaves the message alone", "[fabric]") {
  const Report passing = report_of({busbw(46, "inter_node"), pair("gpa-node1", "gpa-node2", 45)});
  CHECK_THAT(verdict_of(passing, "all_reduce_line_rate", "inter_node").message, !Catch::Contains("slowest node pair"));
  const Report no_pairs = report_of({busbw(30, "inter_node")});
  const RuleVerdict& v = verdict_of(no_pairs, "all_reduce_line_rate", "inter_node");
  CHECK(v.outcome == RuleOutcome::Fail);
  CHECK_THAT(v.message, !Catch::Contains("slowest node pair"));
}

TEST_CASE("slowest pair: a failure on one node does not name a pair", "[fabric]") {
  RuleVerdict v;
  v.outcome = RuleOutcome::Fail;
  v.record = busbw(1, "intra_node");
  v.message = "slow";
  std::vector<RuleVerdict> vs = {v};
  name_slowest_pair(vs, {pair("a", "b", 3)});
  CHECK(vs[0].message == "slow");
  Record skipped = pair("c", "d", 1);
  skipped.status = Status::Skip;
  CHECK(slowest_node_pair({pair("a", "b", 3), skipped})->params.at("a") == "a");
  CHECK_FALSE(slowest_node_pair({skipped}));
}

TEST_CASE("fabric: risen counters and a bad port drain their node with the reason; a reset is watched", "[fabric]") {
  const std::vector<std::string> hosts = {"gpa-node1", "gpa-node2", "gpa-node3", "gpa-node4"};
  std::vector<Record> records;
  for (const auto& h : hosts) records.push_back(gemm(h));
  records.push_back(node_check("discover", "fabric_ports", "gpa-node3", Status::Fail, "mlx5_1/1 is 1: DOWN (2 active, 3 expected)"));
  records.push_back(node_check("discover", "fabric_rate", "gpa-node1", Status::Pass, "every port at 400 Gb/s"));
  const Report r = report_of(records,
                             {source("smoke", "port_counters",
                                     {counters_doc("gpa-node1", "smoke", 0, 0), counters_doc("gpa-node2", "smoke", 3, 17),
                                      counters_doc("gpa-node4", "smoke", 9, 9)}),
                              source("ddp", "port_counters",
                                     {counters_doc("gpa-node1", "ddp", 0, 0), counters_doc("gpa-node2", "ddp", 17, 17),
                                      counters_doc("gpa-node4", "ddp", 0, 0)})},
                             hosts);
  CHECK(exit_code(r) == 1);
  CHECK(names(r.node_actions.drain) == std::vector<std::string>{"gpa-node2", "gpa-node3"});
  CHECK(names(r.node_actions.watch) == std::vector<std::string>{"gpa-node4"});
  CHECK(r.node_actions.drain[0].first_problem ==
        "FAIL port_counters symbol_error mlx5_0/1: gpa-node2 mlx5_0/1 symbol_error rose by 14 (3 -> 17), first during "
        "smoke; read from the start of smoke to the end of ddp");
  CHECK(r.node_actions.drain[1].first_problem == "FAIL fabric_ports: mlx5_1/1 is 1: DOWN (2 active, 3 expected)");
  CHECK_THAT(r.node_actions.watch[0].first_problem, Catch::Contains("WARN port_counters symbol_error mlx5_0/1: gpa-node4"));
  CHECK(r.node_actions.unattributed_failures == 0);
  const std::string drain = drain_script_text("4242", "/results/run", r.node_actions);
  CHECK_THAT(drain, Catch::Contains("scontrol update NodeName='gpa-node2' State=DRAIN Reason='gpuaccept 4242: FAIL port_counters symbol_error"));
  // The report's own check counts in its phase.
  const auto smoke = std::find_if(r.phases.begin(), r.phases.end(), [](const auto& p) { return p.phase == "smoke"; });
  REQUIRE(smoke != r.phases.end());
  CHECK(smoke->status == Level::Fail);
}

TEST_CASE("fabric: counters that went down only make the verdict a warning", "[fabric]") {
  const Report r = report_of({gemm("gpa-node1")},
                             {source("smoke", "port_counters", {counters_doc("gpa-node1", "smoke", 9, 9)}),
                              source("ddp", "port_counters", {counters_doc("gpa-node1", "ddp", 0, 0)})});
  CHECK(verdict_word(r) == "PASS");
  CHECK(r.verdict == Level::Warn);
  CHECK(r.node_actions.drain.empty());
}

TEST_CASE("fabric: the HTML section escapes hostnames and port names", "[fabric][escape]") {
  const std::string host = "<script>alert(1)</script>";
  const std::string device = "mlx5_<b>0</b>";
  std::vector<Record> records = {gemm(host), busbw(30, "inter_node"), pair(host, "gpa-node1", 12)};
  Record transport = node_check("nccl-scaling", "nccl_transport", "", Status::Fail, "NET/Socket between nodes on " + host);
  transport.params = {{"scale", "inter_node"}, {"observed", "NET/Socket"}, {"hosts_socket", host + ",gpa-node1"}};
  records.push_back(transport);
  const Report r = report_of(records,
                             {source("discover", "inventory", {inventory_doc(host, device)}),
                              source("smoke", "port_counters", {counters_doc(host, "smoke", 1, 2, device)})},
                             {host, "gpa-node1"});
  const std::string html = fabric_section(r);
  CHECK_THAT(html, Catch::Contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK_THAT(html, Catch::Contains("mlx5_&lt;b&gt;0&lt;/b&gt;/1"));
  CHECK_THAT(html, Catch::Contains("NET/Socket between nodes on &lt;script&gt;"));
  CHECK_THAT(html, !Catch::Contains("<script"));
  CHECK_THAT(html, !Catch::Contains("<b>"));
  // What the section holds: the port, the counter that rose, the transport, the line rate, the pair.
  CHECK_THAT(html, Catch::Contains("400 Gb/sec (4X NDR)"));
  CHECK_THAT(html, Catch::Contains("possible: nvidia_peermem loaded"));
  CHECK_THAT(html, Catch::Contains("+1"));
  CHECK_THAT(html, Catch::Contains("all_reduce_line_rate"));
  CHECK_THAT(html, Catch::Contains("50.0 GB/s"));  // expected: 400 Gb/s / 8
  CHECK_THAT(html, Catch::Contains("slowest node pair: &lt;script&gt;alert(1)&lt;/script&gt; - gpa-node1 12.0 GB/s"));
}

TEST_CASE("fabric: a run without any fabric data says so, and counters SKIP", "[fabric]") {
  const Report r = report_of({gemm("gpa-node1")}, {}, {"gpa-node1"});
  CHECK(r.fabric.empty());
  CHECK_THAT(fabric_section(r), Catch::Contains("No fabric data in this run"));
  const json s = json::parse(summary_json_text(r));
  CHECK(s["fabric"]["counters"]["status"] == "SKIP");
  CHECK_THAT(s["fabric"]["counters"]["reason"].get<std::string>(), Catch::Contains("no port_counters documents"));
}

TEST_CASE("fabric: summary.json names ports, counters, transports, bandwidth against the line rate and pairs", "[fabric]") {
  Record transport = node_check("nccl-scaling", "nccl_transport", "", Status::Fail, "sockets");
  transport.params = {{"scale", "all"}, {"observed", "NET/Socket+P2P"}, {"hosts_socket", "gpa-node1,gpa-node2"}};
  const Report r = report_of({gemm("gpa-node1"), busbw(30, "inter_node"), busbw(35, "inter_node", "536870912"),
                              busbw(50, "inter_node", "134217728"), transport, pair("gpa-node1", "gpa-node2", 20)},
                             {source("discover", "inventory", {inventory_doc("gpa-node1", "mlx5_0")}),
                              source("smoke", "port_counters", {counters_doc("gpa-node2", "smoke", 1, 5)})},
                             {"gpa-node1", "gpa-node2"});
  const json f = json::parse(summary_json_text(r))["fabric"];
  REQUIRE(f["nodes"].size() == 2);
  CHECK(f["nodes"][0]["node"] == "gpa-node1");
  CHECK(f["nodes"][0]["ports"][0]["port"] == "mlx5_0/1");
  CHECK(f["nodes"][0]["ports"][0]["nearest_gpus"] == json::array({0}));
  CHECK(f["nodes"][0]["ports"][0]["active"] == true);
  CHECK(f["nodes"][1]["status"] == "FAIL");
  CHECK(f["counters"]["status"] == "FAIL");
  REQUIRE(f["counters"]["changes"].size() == 1);
  CHECK(f["counters"]["changes"][0]["node"] == "gpa-node2");
  CHECK(f["counters"]["changes"][0]["from"] == 1);
  CHECK(f["counters"]["changes"][0]["to"] == 5);
  CHECK(f["transports"][0]["params"]["hosts_socket"] == "gpa-node1,gpa-node2");
  // The largest size from 256 MiB: 512 MiB's 35 GB/s against 40.
  REQUIRE(f["inter_node_busbw"].size() == 1);
  CHECK(f["inter_node_busbw"][0]["bytes"] == "536870912");
  CHECK(f["inter_node_busbw"][0]["value"] == 35.0);
  CHECK(f["inter_node_busbw"][0]["rule"] == "all_reduce_line_rate");
  CHECK(f["inter_node_busbw"][0]["outcome"] == "FAIL");
  CHECK(f["inter_node_busbw"][0]["bound"].get<double>() == Approx(40.0));
  CHECK(f["inter_node_busbw"][0]["expected_gbytes_per_s"].get<double>() == Approx(50.0));
  CHECK_THAT(f["inter_node_busbw"][0]["rule_message"].get<std::string>(),
             Catch::Contains("slowest node pair: gpa-node1 - gpa-node2 20.0 GB/s"));
  CHECK(f["slowest_node_pair"]["params"]["b"] == "gpa-node2");
}
