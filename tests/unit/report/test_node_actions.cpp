#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "model/node_actions.h"
#include "model/report.h"
#include "output/drain_files.h"
#include "slurm/slurm_api.h"

using namespace gpuaccept;
using namespace gpuaccept::report;

namespace {

Record on(const std::string& node, Status s, const std::string& test = "gemm", int rank = 0) {
  Record r;
  r.phase = "smoke";
  r.test = test;
  r.node = node;
  r.rank = rank;
  r.gpu_index = 0;
  r.status = s;
  r.message = "why " + node;
  return r;
}

RuleVerdict verdict(const Record& r, RuleCheck check, RuleOutcome outcome) {
  RuleVerdict v;
  v.rule.name = check == RuleCheck::Min ? "gemm_min" : "gemm_fleet";
  v.check = check;
  v.outcome = outcome;
  v.record = r;
  v.message = "off";
  return v;
}

std::vector<std::string> names(const std::vector<NodeAction>& list) {
  std::vector<std::string> out;
  for (const auto& a : list) out.push_back(a.node);
  return out;
}

// What `sh` makes of `word`: the quoting is right when the shell gives back the text.
std::string through_shell(const std::string& word) {
  std::string cmd = "printf %s " + word;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[256];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ::pclose(p);
  return out;
}

}  // namespace

TEST_CASE("node actions: a node's own FAIL or ERROR, or an absolute rule's FAIL, drains it") {
  Report r;
  r.grid.nodes = {"gpu01", "gpu02", "gpu03", "gpu04"};
  r.checks = {on("gpu01", Status::Pass), on("gpu02", Status::Fail, "gpu_health"), on("gpu03", Status::Error),
              on("gpu04", Status::Pass)};
  r.verdicts = {verdict(on("gpu04", Status::Pass), RuleCheck::Min, RuleOutcome::Fail)};
  const NodeActions a = node_actions(r);
  CHECK(names(a.drain) == std::vector<std::string>{"gpu02", "gpu03", "gpu04"});
  CHECK(a.watch.empty());
  CHECK(a.drain[0].first_problem == "FAIL gpu_health: why gpu02");
  CHECK(a.drain[2].first_problem == "FAIL gemm_min: off");
}

TEST_CASE("node actions: a fleet outlier or a warning only is watched, not drained") {
  Report r;
  r.grid.nodes = {"gpu01", "gpu02", "gpu03"};
  const Record ok1 = on("gpu01", Status::Pass), ok2 = on("gpu02", Status::Pass), ok3 = on("gpu03", Status::Pass);
  r.checks = {ok1, ok2, ok3};
  r.verdicts = {verdict(ok1, RuleCheck::FleetBelow, RuleOutcome::Fail),  // relative, even when it FAILs
                verdict(ok2, RuleCheck::Min, RuleOutcome::Warn), verdict(ok3, RuleCheck::Min, RuleOutcome::Pass)};
  const NodeActions a = node_actions(r);
  CHECK(a.drain.empty());
  CHECK(names(a.watch) == std::vector<std::string>{"gpu01", "gpu02"});
}

TEST_CASE("node actions: a node with a FAIL is drained, not also watched") {
  Report r;
  const Record bad = on("gpu01", Status::Fail);
  r.checks = {bad};
  r.verdicts = {verdict(bad, RuleCheck::FleetBelow, RuleOutcome::Warn)};
  const NodeActions a = node_actions(r);
  CHECK(names(a.drain) == std::vector<std::string>{"gpu01"});
  CHECK(a.drain[0].problems == 1);
  CHECK(a.watch.empty());
}

TEST_CASE("node actions: failures about the whole job or a file blame no node") {
  Report r;
  r.grid.nodes = {"gpu01"};
  Record job = on("", Status::Fail, "all_reduce", kJobLevel);  // across nodes: no node named
  Record file = on("", Status::Error, "result_file");
  Record learning = on("", Status::Fail, "learning", kJobLevel);  // the loss curve of all GPUs
  learning.phase = "fsdp-lora";
  r.checks = {job, file, learning};
  const NodeActions a = node_actions(r);
  CHECK(a.drain.empty());
  CHECK(a.watch.empty());
  CHECK(a.unattributed_failures == 3);
}

TEST_CASE("node actions: a record naming a node drains it, whichever rank wrote it") {
  // Issue 39: discover's gpus_per_node, smoke's binding and Slurm checks and nccl-scaling's
  // intra_node rows are written by rank 0 (rank -1) about one node; such a FAIL drains that
  // node with the check as the reason, as a rank's own record does.
  Report r;
  r.grid.nodes = {"gpu01", "gpu02", "gpu03"};
  Record gpus = on("gpu02", Status::Fail, "gpus_per_node", kJobLevel);
  gpus.phase = "discover";
  gpus.gpu_index = -1;
  gpus.message = "0 GPUs visible to the job's ranks, Slurm allocated 1: NVML not loadable";
  Record intra = on("gpu03", Status::Fail, "all_reduce", kJobLevel);
  intra.phase = "nccl-scaling";
  r.checks = {on("gpu01", Status::Pass), gpus, intra};
  r.verdicts = {verdict(on("gpu03", Status::Pass, "all_reduce", kJobLevel), RuleCheck::Min, RuleOutcome::Fail)};
  const NodeActions a = node_actions(r);
  CHECK(names(a.drain) == std::vector<std::string>{"gpu02", "gpu03"});
  CHECK(a.drain[0].first_problem ==
        "FAIL gpus_per_node: 0 GPUs visible to the job's ranks, Slurm allocated 1: NVML not loadable");
  CHECK(a.drain[1].problems == 2);
  CHECK(a.unattributed_failures == 0);
}

TEST_CASE("node actions: a lost node is drained, not the survivors that waited for it") {
  // gpa-node2 lost mid-phase: the survivors' fence timeouts are caused by a peer; the lost
  // ranks' own ERRORs (from their heartbeats, results/heartbeat.h) are gpa-node2's.
  Report r;
  r.grid.nodes = {"gpa-node1", "gpa-node2"};
  Record survivor = on("gpa-node1", Status::Error, "shared_fs", 0);
  survivor.params[kCauseParam] = kCausePeer;
  Record survivor_training = on("gpa-node1", Status::Fail, "training", 1);
  survivor_training.params[kCauseParam] = kCausePeer;
  r.checks = {survivor, survivor_training, on("gpa-node2", Status::Error, "result_gather", 2)};
  const NodeActions a = node_actions(r);
  CHECK(names(a.drain) == std::vector<std::string>{"gpa-node2"});
  CHECK(a.watch.empty());
  CHECK(a.unattributed_failures == 2);
}

TEST_CASE("node actions: hostlists are compressed as scontrol gives them") {
  CHECK(compress_hostlist({"gpu03", "gpu01", "gpu02", "gpu07", "gpu01"}) == "gpu[01-03,07]");
  CHECK(compress_hostlist({"login", "gpa-node2"}) == "gpa-node2,login");
  CHECK(compress_hostlist({}).empty());
  CHECK(hostlist_file_text({}).empty());
  CHECK(hostlist_file_text({{"n1", "x", 1}, {"n2", "y", 1}}) == "n[1-2]\n");
}

TEST_CASE("drain files: a reason has no control characters and is cut on a character boundary") {
  CHECK(drain_reason("123", "FAIL gemm: 612 < 646\nsecond line") == "gpuaccept 123: FAIL gemm: 612 < 646 second line");
  // "gpuaccept 1: " is 13 bytes; 181 more reach byte 194, where a run of two-byte "é" begins,
  // so the cut at byte 197 (200 less "...") falls inside the second one.
  const std::string cut = drain_reason("1", std::string(181, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9" + std::string(300, 'x'));
  CHECK(cut.size() <= kMaxDrainReason);
  CHECK(cut.ends_with("..."));
  const std::string body = cut.substr(0, cut.size() - 3);
  CHECK(body.size() == 196);
  CHECK(body.ends_with("a\xc3\xa9"));  // the first "é" whole, the second left out
}

TEST_CASE("drain files: names and reasons reach scontrol as one word each, whatever they hold") {
  for (const std::string text : {"plain", "it's", "$(touch /tmp/x) `id` ;|&><*?", "a\\b\"c", "'", ""})
    CHECK(through_shell(shell_quote(text)) == text);
  NodeActions a;
  a.drain = {{"gpu'01", "FAIL x: $(reboot)", 1}};
  const std::string script = drain_script_text("77", "/r/77", a);
  CHECK(script.find("scontrol update NodeName='gpu'\\''01' State=DRAIN Reason='gpuaccept 77: FAIL x: $(reboot)'") !=
        std::string::npos);
  NodeActions none;
  CHECK(drain_script_text("77", "/r/77", none).find("no node to drain") != std::string::npos);
  CHECK(drain_script_text("77", "/r/77", none).find("State=DRAIN") == std::string::npos);
}
