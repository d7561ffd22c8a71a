// The report's judgement of port error counters across the phases (model/port_counters.h).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "model/port_counters.h"

using namespace gpuaccept;
using namespace gpuaccept::report;
using nlohmann::json;

namespace {

// A port_counters document as a phase's local rank 0 writes it: one port, mlx5_0/1, with
// the given symbol_error at the phase's start and end (and a flat link_downed).
std::string counters_doc(const std::string& host, const std::string& phase, json start, json end,
                         const std::string& start_time = "2026-11-28T01:00:00Z") {
  return json{{"host", host}, {"phase", phase}, {"start_time", start_time}, {"end_time", start_time},
              {"start", std::move(start)}, {"end", std::move(end)}}
      .dump();
}

json port(std::uint64_t symbol_error, std::uint64_t link_downed = 0) {
  return {{"mlx5_0/1", {{"symbol_error", symbol_error}, {"link_downed", link_downed}, {"port_xmit_discards", 0}}}};
}

PhaseSource source(const std::string& phase, std::vector<std::string> docs) {
  PhaseSource s;
  s.phase = phase;
  s.path = "/results/run/" + phase + ".h5";
  if (!docs.empty()) s.documents[kPortCountersTest] = std::move(docs);
  return s;
}

LoadedRun run_of(std::vector<PhaseSource> sources) {
  LoadedRun run;
  run.dir = "/results/run";
  run.sources = std::move(sources);
  return run;
}

}  // namespace

TEST_CASE("port counters: a counter that rose is a FAIL naming node, port, counter, from and to", "[counters]") {
  const auto j = judge_port_counters(run_of({
      source("discover", {counters_doc("gpa-node1", "discover", port(3), port(3)), counters_doc("gpa-node2", "discover", port(0), port(0))}),
      source("nccl-scaling", {counters_doc("gpa-node1", "nccl-scaling", port(3), port(17)),
                              counters_doc("gpa-node2", "nccl-scaling", port(0), port(0))}),
      source("ddp", {counters_doc("gpa-node1", "ddp", port(17), port(17)), counters_doc("gpa-node2", "ddp", port(0), port(0))}),
  }));
  CHECK(j.level() == Level::Fail);
  CHECK(j.skipped.empty());
  CHECK(j.documents == 6);
  CHECK(j.nodes == 2);
  CHECK(j.ports == 2);
  REQUIRE(j.changes.size() == 1);
  const CounterChange& c = j.changes[0];
  CHECK(c.node == "gpa-node1");
  CHECK(c.port == "mlx5_0/1");
  CHECK(c.counter == "symbol_error");
  CHECK(c.from == 3);
  CHECK(c.to == 17);
  CHECK(c.rise == 14);
  CHECK(c.phase == "nccl-scaling");
  CHECK(c.message ==
        "gpa-node1 mlx5_0/1 symbol_error rose by 14 (3 -> 17), first during nccl-scaling; read from the start of "
        "discover to the end of ddp");
  REQUIRE(j.checks.size() == 1);
  const Record& r = j.checks[0];
  CHECK(r.status == Status::Fail);
  CHECK(r.phase == "nccl-scaling");  // where it was first seen
  CHECK(r.node == "gpa-node1");
  CHECK(r.rank == kJobLevel);
  CHECK(r.test == "port_counters");
  CHECK(r.value == 14);
  CHECK(r.params == Params{{"port", "mlx5_0/1"}, {"counter", "symbol_error"}});
  CHECK(r.message == c.message);
}

TEST_CASE("port counters: counters that did not move fail nothing", "[counters]") {
  const auto j = judge_port_counters(run_of({
      source("discover", {counters_doc("gpa-node1", "discover", port(5, 1), port(5, 1))}),
      source("smoke", {counters_doc("gpa-node1", "smoke", port(5, 1), port(5, 1))}),
  }));
  CHECK(j.level() == Level::Pass);
  CHECK(j.changes.empty());
  CHECK(j.checks.empty());
  CHECK(j.ports == 1);
}

TEST_CASE("port counters: a counter that went down (a reset) is a WARN note, not a FAIL", "[counters]") {
  const auto j = judge_port_counters(run_of({
      source("smoke", {counters_doc("gpa-node1", "smoke", port(40), port(40))}),
      source("ddp", {counters_doc("gpa-node1", "ddp", port(0), port(0))}),
  }));
  CHECK(j.level() == Level::Warn);
  CHECK(j.checks.empty());
  REQUIRE(j.changes.size() == 1);
  CHECK(j.changes[0].level == Level::Warn);
  CHECK(j.changes[0].reset);
  CHECK(j.changes[0].rise == 0);
  CHECK_THAT(j.changes[0].message,
             Catch::StartsWith("gpa-node1 mlx5_0/1 symbol_error went down 40 -> 0 between the end of smoke and the start "
                               "of ddp (a reset"));
}

TEST_CASE("port counters: a rise after a reset is still a rise", "[counters]") {
  const auto j = judge_port_counters(run_of({
      source("smoke", {counters_doc("gpa-node1", "smoke", port(40), port(40))}),
      source("ddp", {counters_doc("gpa-node1", "ddp", port(0), port(2))}),
  }));
  CHECK(j.level() == Level::Fail);
  REQUIRE(j.changes.size() == 1);
  CHECK(j.changes[0].rise == 2);
  CHECK(j.changes[0].from == 40);
  CHECK(j.changes[0].to == 2);
  CHECK_THAT(j.changes[0].message, Catch::Contains("first during ddp"));
  CHECK_THAT(j.changes[0].message, Catch::Contains("it was also reset (40 -> 0 between the end of smoke and the start of ddp)"));
}

TEST_CASE("port counters: a rise between two phases is named so, and charged to the later one", "[counters]") {
  const auto j = judge_port_counters(run_of({
      source("smoke", {counters_doc("gpa-node1", "smoke", port(0, 0), port(0, 0))}),
      source("nccl-scaling", {counters_doc("gpa-node1", "nccl-scaling", port(0, 1), port(0, 1))}),
  }));
  REQUIRE(j.checks.size() == 1);
  CHECK(j.checks[0].phase == "nccl-scaling");
  CHECK(j.checks[0].params.at("counter") == "link_downed");
  CHECK_THAT(j.checks[0].message, Catch::Contains("first between the end of smoke and the start of nccl-scaling"));
}

TEST_CASE("port counters: the readings follow the pipeline, not the order the files were read in", "[counters]") {
  // fsdp-lora read before discover: discover's 3 is still the start, fsdp-lora's 3 the end.
  const auto j = judge_port_counters(run_of({
      source("fsdp-lora", {counters_doc("gpa-node1", "fsdp-lora", port(3), port(3))}),
      source("discover", {counters_doc("gpa-node1", "discover", port(3), port(3))}),
  }));
  CHECK(j.changes.empty());
  CHECK(j.level() == Level::Pass);
}

TEST_CASE("port counters: without documents nothing is judged and the reason is said", "[counters]") {
  const auto none = judge_port_counters(run_of({source("discover", {}), source("smoke", {})}));
  CHECK(none.level() == Level::Skip);
  CHECK(none.checks.empty());
  CHECK(none.changes.empty());
  CHECK_THAT(none.skipped, Catch::Contains("no port_counters documents"));
  // A node without RDMA ports writes "start": {}.
  const auto no_ports = judge_port_counters(run_of({source("smoke", {counters_doc("gpa-node1", "smoke", json::object(), json::object())})}));
  CHECK(no_ports.level() == Level::Skip);
  CHECK(no_ports.nodes == 1);
  CHECK(no_ports.ports == 0);
  CHECK_THAT(no_ports.skipped, Catch::Contains("no port with counters read twice"));
}

TEST_CASE("port counters: congestion (port_xmit_discards) is not a fault", "[counters]") {
  const json start = {{"mlx5_0/1", {{"port_xmit_discards", 0}}}};
  const json end = {{"mlx5_0/1", {{"port_xmit_discards", 90000}}}};
  const auto j = judge_port_counters(run_of({source("nccl-scaling", {counters_doc("gpa-node1", "nccl-scaling", start, end)})}));
  CHECK(j.checks.empty());
  CHECK(j.changes.empty());
}

TEST_CASE("port counters: a counter stuck at its largest value cannot show a rise, and says so", "[counters]") {
  const json start = {{"mlx5_0/1", {{"local_link_integrity_errors", 15}, {"symbol_error", 65535}}}};
  const auto j = judge_port_counters(run_of({source("smoke", {counters_doc("gpa-node1", "smoke", start, start)})}));
  CHECK(j.checks.empty());
  CHECK(j.level() == Level::Warn);
  REQUIRE(j.changes.size() == 2);
  CHECK_THAT(j.changes[0].message, Catch::Contains("local_link_integrity_errors stands at 15, the largest value of its 4-bit counter"));
  CHECK_THAT(j.changes[1].message, Catch::Contains("symbol_error stands at 65535, the largest value of its 16-bit counter"));
}

TEST_CASE("port counters: unreadable documents and values are named, the rest is judged", "[counters]") {
  const json bad = {{"mlx5_0/1", {{"symbol_error", "many"}}}};
  const auto j = judge_port_counters(run_of({source("smoke", {"not json", json{{"phase", "smoke"}}.dump(),
                                                               counters_doc("gpa-node1", "smoke", bad, port(1)),
                                                               counters_doc("gpa-node2", "smoke", port(0), port(9))})}));
  REQUIRE(j.problems.size() == 3);
  CHECK_THAT(j.problems[0], Catch::Contains("smoke.h5: a port_counters document is not a JSON object"));
  CHECK_THAT(j.problems[1], Catch::Contains("names no host"));
  CHECK_THAT(j.problems[2], Catch::Contains("gpa-node1 smoke port mlx5_0/1 symbol_error: '\"many\"' is not a count"));
  REQUIRE(j.checks.size() == 1);
  CHECK(j.checks[0].node == "gpa-node2");
}
