// Which nodes each phase ran on (model/node_coverage.h), which nodes a run hands back
// (model/good_nodes.h) and the files that do it (output/resume_files.h).
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "../fresh_dir.h"
#include "model/good_nodes.h"
#include "model/node_coverage.h"
#include "model/report.h"
#include "output/resume_files.h"

using namespace gpuaccept;
using namespace gpuaccept::report;

namespace {

PhaseSource source(const std::string& phase, std::map<std::string, std::string> attributes) {
  PhaseSource s;
  s.phase = phase;
  s.attributes = std::move(attributes);
  return s;
}

Record measured(const std::string& phase, const std::string& node, int gpu, Status s = Status::Pass) {
  Record r;
  r.phase = phase;
  r.node = node;
  r.rank = 0;
  r.gpu_index = gpu;
  r.test = "gemm";
  r.status = s;
  return r;
}

// A run of discover and smoke on gpu01 and gpu02, every GPU measured and passed.
Report passing_run() {
  Report r;
  r.grid.nodes = {"gpu01", "gpu02"};
  for (const char* phase : {"discover", "smoke"}) {
    PhaseSummary p;
    p.phase = phase;
    p.sources.push_back(source(phase, {{"hosts", "gpu01,gpu02"}, {"end_time", std::string("2026-11-28T10:0") +
                                                                               (phase[0] == 'd' ? "1" : "5") + ":00Z"}}));
    r.phases.push_back(p);
    for (const char* node : {"gpu01", "gpu02"}) r.checks.push_back(measured(phase, node, 0));
  }
  std::vector<PhaseSource> all;
  for (const auto& p : r.phases) all.insert(all.end(), p.sources.begin(), p.sources.end());
  r.node_coverage = node_coverage(all);
  return r;
}

std::string why_held(const GoodNodes& g, const std::string& node) {
  for (const auto& h : g.held_back)
    if (h.node == node) return h.why;
  return "";
}

int run_sh(const std::string& script, const std::string& args = "") {
  return std::system(("sh " + script + " " + args + " >/dev/null 2>&1").c_str());
}

}  // namespace

TEST_CASE("node coverage: phases on one node set, or per node the phases that did not run there") {
  const auto same = node_coverage({source("discover", {{"hosts", "gpa-node1,gpa-node2"}}),
                                   source("smoke", {{"hosts", "gpa-node2,gpa-node1"}})});
  CHECK(same.same_nodes());
  CHECK(same.phases.size() == 2);

  // The case: discover on gpa-node1, the rest moved to gpa-node2. A rank checkpoint
  // without `hosts` counts by its job's allocation; a missing file names no node.
  const auto moved = node_coverage({source("discover", {{"hosts", "gpa-node1"}}),
                                    source("smoke", {{"hosts", "gpa-node2"}}),
                                    source("ddp", {{"slurm_nodelist", "gpa-node[2]"}}), source("fsdp-lora", {})});
  CHECK_FALSE(moved.same_nodes());
  CHECK(moved.phases.size() == 3);
  CHECK(moved.missed.at("gpa-node1") == std::vector<std::string>{"smoke", "ddp"});
  CHECK(moved.missed.at("gpa-node2") == std::vector<std::string>{"discover"});
  CHECK(missed_phases_text(moved, 8) == "gpa-node1 did not run smoke, ddp; gpa-node2 did not run discover");
  CHECK(missed_phases_text(moved, 1) == "gpa-node1 did not run smoke, ddp; and 1 more nodes");
}

TEST_CASE("good nodes: every phase ran on the node, measured it and a GPU of it, and passed") {
  Report r = passing_run();
  const GoodNodes g = good_nodes(r);
  CHECK(g.nodes == std::vector<std::string>{"gpu01", "gpu02"});
  CHECK(g.held_back.empty());
  CHECK(g.run_ended == "2026-11-28T10:05:00Z");  // the latest file's end
}

TEST_CASE("good nodes: a node to drain or to watch is held back with its first problem") {
  Report r = passing_run();
  r.node_actions.drain.push_back({"gpu01", "FAIL gemm: slow", 1});
  r.node_actions.watch.push_back({"gpu02", "WARN gemm_fleet: below peers", 1});
  const GoodNodes g = good_nodes(r);
  CHECK(g.nodes.empty());
  CHECK(why_held(g, "gpu01") == "to drain: FAIL gemm: slow");
  CHECK(why_held(g, "gpu02") == "to watch: WARN gemm_fleet: below peers");
}

TEST_CASE("good nodes: a failure that names no node holds back every node") {
  Report r = passing_run();
  r.node_actions.unattributed_failures = 1;  // e.g. an inter-node all_reduce below its floor
  const GoodNodes g = good_nodes(r);
  CHECK(g.nodes.empty());
  CHECK(why_held(g, "gpu02").find("any node may be their cause") != std::string::npos);
}

TEST_CASE("good nodes: a phase that did not run on the node, or measured nothing there, holds it back") {
  Report r = passing_run();
  r.phases[1].sources[0].attributes["hosts"] = "gpu02";  // smoke ran on gpu02 only
  std::vector<PhaseSource> all;
  for (const auto& p : r.phases) all.insert(all.end(), p.sources.begin(), p.sources.end());
  r.node_coverage = node_coverage(all);
  r.checks.erase(r.checks.begin() + 2);  // and so measured nothing on gpu01
  GoodNodes g = good_nodes(r);
  CHECK(g.nodes == std::vector<std::string>{"gpu02"});
  CHECK(why_held(g, "gpu01") == "smoke did not run there");

  r = passing_run();
  r.checks[3].status = Status::Skip;  // smoke on gpu02: nothing but a SKIP
  g = good_nodes(r);
  CHECK(g.nodes == std::vector<std::string>{"gpu01"});
  CHECK(why_held(g, "gpu02").starts_with("smoke measured nothing on it"));
}

TEST_CASE("good nodes: a node none of whose GPUs was measured is held back (a machine without GPUs)") {
  Report r = passing_run();
  for (auto& c : r.checks) c.gpu_index = -1;  // what a node-level check without a GPU records
  const GoodNodes g = good_nodes(r);
  CHECK(g.nodes.empty());
  CHECK(why_held(g, "gpu01") == "no GPU of it was measured");
}

TEST_CASE("resume files: good-nodes.txt is a hostlist; resume.sh quotes every name and is valid sh") {
  GoodNodes g;
  CHECK(good_nodes_file_text(g).empty());
  g.held_back.push_back({"gpu01", "no GPU of it was measured"});
  std::string s = resume_script_text("123", "/r/123", g);
  CHECK(s.find("no node passed every phase") != std::string::npos);
  CHECK(s.find("#   gpu01: no GPU of it was measured\n") != std::string::npos);
  CHECK(s.find("scontrol") == std::string::npos);

  g.nodes = {"gpu01", "gpu02", "gpu07"};
  g.reservation = "repair'; rm -rf /";
  g.run_ended = "2026-11-28T10:05:00Z";
  CHECK(good_nodes_file_text(g) == "gpu[01-02,07]\n");
  s = resume_script_text("123", "/r/123", g);
  CHECK(s.find("resume_drained 'gpu01'\n") != std::string::npos);
  CHECK(s.find("resume_drained 'gpu07'\n") != std::string::npos);
  CHECK(s.find("release_from_reservation 'repair'\\''; rm -rf /' 'gpu[01-02,07]'\n") != std::string::npos);
  CHECK(s.find("run_ended=1795860300\n") != std::string::npos);
  const auto dir = gpuaccept::testing::fresh_dir("resume-script");
  std::ofstream(dir / "resume.sh") << s;
  CHECK(run_sh("-n " + (dir / "resume.sh").string()) == 0);
}

TEST_CASE("resume files: ISO 8601 UTC times, and nothing else") {
  CHECK(utc_seconds("1970-01-01T00:00:00Z") == 0);
  CHECK(utc_seconds("2026-11-28T10:05:00Z") == 1795860300);
  CHECK_FALSE(utc_seconds("2026-11-28T10:05:00").has_value());  // local time: not what the files write
  CHECK_FALSE(utc_seconds("").has_value());
  CHECK_FALSE(utc_seconds("yesterday").has_value());
}
