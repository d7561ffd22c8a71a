#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "html/html_checkpoints.h"
#include "html/html_report.h"
#include "model/report.h"
#include "thresholds/threshold_set.h"

using namespace gpuaccept;
using namespace gpuaccept::report;
namespace fs = std::filesystem;

namespace {

const fs::path kShipped = GPUACCEPT_THRESHOLDS_SOURCE_DIR;

Record record(const std::string& phase, int rank, const std::string& node, const std::string& test,
              const std::string& metric, double value, const std::string& unit, Params params = {}) {
  return {.phase = phase, .job_id = "4242", .rank = rank, .node = node, .test = test, .metric = metric,
          .value = value, .unit = unit, .params = std::move(params)};
}

Record check(const std::string& phase, const std::string& test, Status status, const std::string& message) {
  return {.phase = phase, .job_id = "4242", .rank = kJobLevel, .test = test, .status = status, .message = message};
}

// A drill as the training phases record it (docs/results-format.md): two ranks per node, each
// saving 1 GiB at step 12 at 2 GB/s; every node at 4 GB/s.
std::vector<Record> drill(const std::string& phase, const std::vector<std::string>& nodes) {
  std::vector<Record> out;
  const Params saved = {{"step", "12"}, {"bytes", "1073741824"}};
  int rank = 0;
  for (const auto& node : nodes) {
    for (int local = 0; local < 2; ++local, ++rank) {
      out.push_back(record(phase, rank, node, "checkpoint_save", "write_bandwidth", 2.0, "GB/s", saved));
      out.push_back(record(phase, rank, node, "checkpoint_baseline", "write_bandwidth", 2.2, "GB/s"));
      out.push_back(record(phase, rank, node, "checkpoint_baseline", "read_bandwidth", 3.1, "GB/s"));
      out.push_back(record(phase, rank, node, "checkpoint_restore", "read_bandwidth", 2.9, "GB/s"));
    }
    out.push_back(record(phase, kJobLevel, node, "checkpoint_save", "node_write_bandwidth", 4.0, "GB/s"));
  }
  out.push_back(record(phase, kJobLevel, "", "checkpoint_save", "aggregate_write_bandwidth", 7.5, "GB/s"));
  out.push_back(record(phase, kJobLevel, "", "checkpoint_save", "seconds_to_consistent", 2.4, "s"));
  out.push_back(record(phase, kJobLevel, "", "checkpoint_save", "bytes", 4294967296.0, "B"));
  out.push_back(check(phase, "checkpoint_save", Status::Pass, "step 12: 4 files, 4 GiB, manifest written"));
  out.push_back(record(phase, kJobLevel, "", "checkpoint_baseline", "aggregate_write_bandwidth", 8.2, "GB/s"));
  out.push_back(record(phase, kJobLevel, "", "checkpoint_baseline", "aggregate_read_bandwidth", 11.5, "GB/s"));
  out.push_back(record(phase, kJobLevel, "", "checkpoint_efficiency", "write_vs_sequential", 91.5, "%",
                       {{"bytes_per_rank", "1073741824"}}));
  out.push_back(record(phase, kJobLevel, "", "checkpoint_restore", "aggregate_read_bandwidth", 10.4, "GB/s"));
  out.push_back(record(phase, kJobLevel, "", "checkpoint_restore", "seconds", 0.4, "s"));
  out.push_back(check(phase, "checkpoint_restore", Status::Pass, "restored from /shared/ckpt/step-00000012"));
  out.push_back(check(phase, "checkpoint_resume", Status::Pass,
                      "steps 13-16: losses and state checksum bit-equal to the run that never stopped"));
  return out;
}

Record& find(std::vector<Record>& records, const std::string& test, const std::string& metric, const std::string& node = "") {
  const auto it = std::find_if(records.begin(), records.end(), [&](const Record& r) {
    return r.test == test && r.metric == metric && r.node == node;
  });
  REQUIRE(it != records.end());
  return *it;
}

// The report of `records`, judged by the shipped generic.yaml.
Report report_of(std::vector<Record> records) {
  LoadedRun run;
  run.dir = "/results/run";
  run.records = std::move(records);
  return build_report(run, InventoryTable{}, ThresholdSet::load(kShipped / "generic.yaml"), ThresholdChoice{}, nullptr);
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

const RuleVerdict* flagged_by(const Report& r, const std::string& rule) {
  for (const auto& v : r.verdicts)
    if (v.rule.name == rule && v.flagged()) return &v;
  return nullptr;
}

}  // namespace

TEST_CASE("checkpoints: the drill's figures in a table, the dd-style ones beside them") {
  const Report r = report_of(drill("ddp", {"gpa-node1", "gpa-node2"}));
  const std::string html = checkpoint_part(r, "ddp");
  CHECK_THAT(html, Catch::Contains("<h4>Training checkpoints</h4>"));
  // step, size, seconds to consistent, write and its dd figure, efficiency, read and its dd figure
  CHECK_THAT(html, Catch::Contains(R"(<td class="num">12</td><td class="num">4 GiB</td><td class="num">2.4</td>)"
                                   R"(<td class="num">7.5</td><td class="num">8.2</td><td class="num">91.5</td>)"
                                   R"(<td class="num">10.4</td><td class="num">11.5</td>)"));
  CHECK_THAT(html, Catch::Contains("steps 13-16: losses and state checksum bit-equal to the run that never stopped"));
  CHECK_THAT(html, Catch::Contains(R"(title="step 12: 4 files, 4 GiB, manifest written")"));
  CHECK_THAT(html, Catch::Contains(R"(title="restored from /shared/ckpt/step-00000012")"));
  CHECK(count_of(html, R"(<span class="pill pass">PASS</span>)") == 3);  // save, restore, resume
  CHECK_THAT(html, !Catch::Contains("<th>job</th>"));                    // one job: no column for it
  // A bar per node, in the report's node order, with the median as reference.
  CHECK_THAT(html, Catch::Contains("Checkpoint write bandwidth per node"));
  CHECK(count_of(html, R"(class="bar pass")") == 2);
  CHECK_THAT(html, Catch::Contains("gpa-node1: 4.0 GB/s (PASS)"));
  CHECK_THAT(html, Catch::Contains("median 4.0"));
}

TEST_CASE("checkpoints: job-level records are found whatever node they carry") {
  // ResultWriter::measure(...).rank = kJobLevel leaves rank 0's hostname on the record.
  std::vector<Record> records = drill("ddp", {"gpa-node1", "gpa-node2"});
  for (auto& rec : records)
    if (rec.rank == kJobLevel && rec.node.empty()) rec.node = "gpa-node1";
  const std::string html = checkpoint_part(report_of(records), "ddp");
  CHECK_THAT(html, Catch::Contains(R"(<td class="num">12</td><td class="num">4 GiB</td><td class="num">2.4</td>)"
                                   R"(<td class="num">7.5</td><td class="num">8.2</td><td class="num">91.5</td>)"));
  CHECK(count_of(html, R"(<span class="pill pass">PASS</span>)") == 3);
  CHECK(count_of(html, R"(class="bar )") == 2);  // the nodes' own records only
}

TEST_CASE("checkpoints: the part sits in the training phase's details, and only there") {
  std::vector<Record> records = drill("fsdp-lora", {"gpa-node1"});
  records.push_back(record("smoke", 0, "gpa-node1", "gemm", "tflops", 700, "TFLOP/s"));
  const Report r = report_of(records);
  CHECK(checkpoint_part(r, "smoke").empty());
  CHECK(checkpoint_part(r, "ddp").empty());
  const std::string page = render_html(r);
  const auto phase = page.find(R"(id="phase-fsdp-lora")");
  const auto part = page.find("<h4>Training checkpoints</h4>");
  REQUIRE(phase != std::string::npos);
  REQUIRE(part != std::string::npos);
  CHECK(part > phase);
  CHECK(count_of(page, "<h4>Training checkpoints</h4>") == 1);
}

TEST_CASE("checkpoints: what the rules flag shows in the table and the chart") {
  std::vector<Record> records = drill("ddp", {"gpa-node1", "gpa-node2", "gpa-node3"});
  find(records, "checkpoint_save", "node_write_bandwidth", "gpa-node2").value = 0.3;
  find(records, "checkpoint_efficiency", "write_vs_sequential").value = 70;
  records[0].value = 0.8;  // rank 0's write: 60% below its peers' median
  const Report r = report_of(records);

  const RuleVerdict* floor = flagged_by(r, "ddp_checkpoint_node_write");
  REQUIRE(floor != nullptr);
  CHECK(floor->outcome == RuleOutcome::Fail);
  CHECK(floor->record->node == "gpa-node2");
  const RuleVerdict* efficiency = flagged_by(r, "ddp_checkpoint_efficiency");
  REQUIRE(efficiency != nullptr);
  CHECK(efficiency->outcome == RuleOutcome::Warn);
  const RuleVerdict* fleet = flagged_by(r, "ddp_checkpoint_write_fleet");
  REQUIRE(fleet != nullptr);
  CHECK(fleet->outcome == RuleOutcome::Warn);
  CHECK(fleet->record->rank == 0);
  CHECK(fleet->peers == 5);

  const std::string html = checkpoint_part(r, "ddp");
  CHECK_THAT(html, Catch::Contains(R"(<td class="num">70.0 <span class="pill warn">WARN</span></td>)"));
  CHECK(count_of(html, R"(class="bar fail")") == 1);
  CHECK_THAT(html, Catch::Contains("gpa-node2: 0.3 GB/s (FAIL)"));
  CHECK_THAT(html, Catch::Contains("min 0.5"));
}

TEST_CASE("checkpoints: the rules of each training phase judge that phase only") {
  std::vector<Record> records = drill("fsdp-lora", {"gpa-node1", "gpa-node2"});
  find(records, "checkpoint_efficiency", "write_vs_sequential").value = 50;
  const Report r = report_of(records);
  CHECK(flagged_by(r, "fsdp_lora_checkpoint_efficiency") != nullptr);
  CHECK(flagged_by(r, "ddp_checkpoint_efficiency") == nullptr);
  for (const auto& v : r.verdicts)
    if (v.rule.phase == "ddp") CHECK(v.outcome == RuleOutcome::NoData);
}

TEST_CASE("checkpoints: the save-vs-dd rule leaves small slices alone") {
  // A LoRA state of 35 MB a rank: the fixed costs of a save (manifest, fsyncs) are most of its
  // time, so its bandwidth against dd's says little (docs/performance-history.md: 70-72% on an H100
  // machine where 0.75-1.5 GB slices gave 77-105%). From 256 MiB a rank the rule judges.
  for (const auto& [bytes, judged] : {std::pair{"36700160", false}, std::pair{"268435456", true}}) {
    std::vector<Record> records = drill("fsdp-lora", {"gpa-node1"});
    Record& efficiency = find(records, "checkpoint_efficiency", "write_vs_sequential");
    efficiency.value = 70;
    efficiency.params["bytes_per_rank"] = bytes;
    const Report r = report_of(records);
    CHECK((flagged_by(r, "fsdp_lora_checkpoint_efficiency") != nullptr) == judged);
  }
}

TEST_CASE("checkpoints: hostnames and messages are escaped") {
  std::vector<Record> records = drill("ddp", {"gpa-node1", "<script>alert(1)</script>"});
  find(records, "checkpoint_resume", "").message = "loss at step 14 <b>differs</b>";
  find(records, "checkpoint_resume", "").status = Status::Fail;
  find(records, "checkpoint_save", "").message = R"(rank 3 on "<img src=x>" did not report)";
  const Report r = report_of(records);
  const std::string html = checkpoint_part(r, "ddp");
  CHECK_THAT(html, Catch::Contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK_THAT(html, Catch::Contains("loss at step 14 &lt;b&gt;differs&lt;/b&gt;"));
  CHECK_THAT(html, Catch::Contains("rank 3 on &quot;&lt;img src=x&gt;&quot; did not report"));
  CHECK_THAT(html, Catch::Contains(R"(<span class="pill fail">FAIL</span> loss at step 14)"));
  CHECK_THAT(html, !Catch::Contains("<script"));
  CHECK_THAT(html, !Catch::Contains("<b>"));
  CHECK_THAT(html, !Catch::Contains("<img"));
}

TEST_CASE("checkpoints: one row per job, and figures a job did not record as '-'") {
  std::vector<Record> records = drill("ddp", {"gpa-node1"});
  std::vector<Record> second = drill("ddp", {"gpa-node1"});
  for (auto& rec : second) rec.job_id = "4343";
  std::erase_if(second, [](const Record& rec) { return rec.test == "checkpoint_resume" || rec.test == "checkpoint_baseline"; });
  records.insert(records.end(), second.begin(), second.end());
  const std::string html = checkpoint_part(report_of(records), "ddp");
  CHECK_THAT(html, Catch::Contains("<th>job</th>"));
  CHECK_THAT(html, Catch::Contains(R"(<tr><td class="nowrap">4242</td>)"));
  CHECK_THAT(html, Catch::Contains(R"(<tr><td class="nowrap">4343</td>)"));
  CHECK_THAT(html, Catch::Contains(R"(<td class="num">7.5</td><td class="num">-</td>)"));  // no dd write in 4343
  CHECK(count_of(html, R"(class="bar )") == 1);  // one node measured twice: one bar
}

TEST_CASE("checkpoints: at 1,024 nodes the chart shows the 64 slowest") {
  std::vector<std::string> nodes;
  for (int n = 1; n <= 1024; ++n) nodes.push_back(fmt::format("gpu{:04d}", n));
  std::vector<Record> records = drill("ddp", nodes);
  find(records, "checkpoint_save", "node_write_bandwidth", "gpu0777").value = 0.3;
  const std::string html = checkpoint_part(report_of(records), "ddp");
  CHECK_THAT(html, Catch::Contains("Checkpoint write bandwidth per node: the 64 lowest of 1024 nodes"));
  CHECK(count_of(html, R"(class="bar )") == 64);
  CHECK_THAT(html, Catch::Contains("gpu0777: 0.3 GB/s (FAIL)"));
  CHECK(html.size() < 40000);
}
