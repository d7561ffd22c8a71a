// "What failed" grouped (issue 39): identical failures are one row with a count and where.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "html/html_sections.h"
#include "model/failure_groups.h"
#include "model/report.h"

using namespace gpuaccept;
using namespace gpuaccept::report;

namespace {

std::string node_name(int n) { return fmt::format("gpu{:04d}", n + 1); }

Record binding(int node, int gpu) {
  Record r;
  r.phase = "smoke";
  r.test = "binding_gpu_count";
  r.metric = "gpus";
  r.value = 0;
  r.unit = "count";
  r.rank = node * 8 + gpu;
  r.node = node_name(node);
  r.gpu_index = gpu;
  r.gpu_uuid = fmt::format("GPU-{:08x}-aaaa-bbbb", node * 8 + gpu);
  r.status = Status::Fail;
  r.message = fmt::format("rank {} on {} sees 0 GPUs; Slurm gave the task 1 (CUDA_VISIBLE_DEVICES={}, {})", r.rank,
                          r.node, gpu, r.gpu_uuid);
  return r;
}

// 64 nodes x 8 GPUs, every GPU failing the same binding check, one GPU also an ECC error.
Report scale_report() {
  Report r;
  for (int n = 0; n < 64; ++n) r.grid.nodes.push_back(node_name(n));
  for (int n = 0; n < 64; ++n)
    for (int g = 0; g < 8; ++g) r.checks.push_back(binding(n, g));
  Record ecc = binding(21, 5);
  ecc.test = "gpu_health";
  ecc.metric.clear();
  ecc.params = {{"item", "ecc_uncorrected"}};
  ecc.message = "2 volatile uncorrectable ECC errors";
  r.checks.push_back(ecc);
  Record job;
  job.phase = "nccl-scaling";
  job.test = "all_reduce";
  job.rank = kJobLevel;
  job.status = Status::Error;
  job.message = "did not finish within 120 s; ranks that did not arrive: 5 (gpu0002)";
  r.checks.push_back(job);
  return r;
}

}  // namespace

TEST_CASE("failure groups: numbers, node names and GPU UUIDs are abstracted", "[report][failures]") {
  const std::unordered_set<std::string> names = {"gpu0007", "gpa-node2"};
  CHECK(abstract_message("rank 12 on gpu0007 sees 0 GPUs (CUDA_VISIBLE_DEVICES=3)", names) ==
        "rank # on <node> sees # GPUs (CUDA_VISIBLE_DEVICES=#)");
  CHECK(abstract_message("gpa-node2 GPU 3: gemm bf16 8192^3 = 612.0 TFLOP/s < 646 (90% of 718)", names) ==
        "<node> GPU #: gemm bf# #^# = # TFLOP/s < # (#% of #)");
  CHECK(abstract_message("ranks 0 and 1 share GPU GPU-5a3f2c1e-0000-1111-2222-333344445555 on gpa-node2.", names) ==
        "ranks # and # share GPU <gpu> on <node>.");
  CHECK(abstract_message("error 1.5e-3 at step 7", names) == "error # at step #");
  CHECK(abstract_message("gpu00071 is not a node of this run", names) == "gpu# is not a node of this run");
  CHECK(abstract_message("", names).empty());
}

TEST_CASE("failure groups: 512 GPUs failing one check are one group, with where", "[report][failures]") {
  const Report r = scale_report();
  const auto groups = group_failures(r);
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].level == Level::Error);  // most severe first
  CHECK(groups[0].where() == "job");
  const FailureGroup& b = groups[1];
  CHECK(b.count == 512);
  CHECK(b.phase == "smoke");
  CHECK(b.check == "binding_gpu_count gpus");
  CHECK(b.nodes.size() == 64);
  CHECK(b.where() == "gpu[0001-0064] GPUs 0-7");
  CHECK(b.example.rank == 0);  // the first member is the example
  CHECK(b.pattern == "rank # on <node> sees # GPUs; Slurm gave the task # (CUDA_VISIBLE_DEVICES=#, <gpu>)");
  CHECK(groups[2].count == 1);
  CHECK(groups[2].where() == "gpu0022 GPU 5");
}

TEST_CASE("failure groups: nodes with other GPUs named get a hostlist of their own", "[report][failures]") {
  Report r;
  r.grid.nodes = {"n1", "n2", "n3"};
  for (const auto& [n, g] : std::vector<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 3}}) {
    Record rec = binding(0, g);
    rec.node = r.grid.nodes[static_cast<std::size_t>(n)];
    rec.message = fmt::format("GPU {} on {} is hot", g, rec.node);
    r.checks.push_back(rec);
  }
  Record node_level = binding(0, 0);
  node_level.node = "n3";
  node_level.gpu_index = -1;
  node_level.rank = kJobLevel;
  node_level.message = "GPU 0 on n3 is hot";
  r.checks.push_back(node_level);
  const auto groups = group_failures(r);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].count == 6);
  CHECK(groups[0].where() == "n[1-2] GPUs 0-1; n3 GPU 3");
}

TEST_CASE("failure groups: What failed has a row per distinct failure, every record still in the phase", "[report][failures]") {
  Report r = scale_report();
  r.failure_groups = group_failures(r);
  const std::string html = failures_section(r);
  std::size_t rows = 0;
  for (std::size_t at = html.find("<tr><td>"); at != std::string::npos; at = html.find("<tr><td>", at + 1)) ++rows;
  CHECK(rows == 3);
  CHECK_THAT(html, Catch::Contains("514 items, 3 distinct") &&
                       Catch::Contains(R"(512 &#215;</span> gpu[0001-0064] GPUs 0-7 <a class="all-of" href="#phase-smoke">all</a>)") &&
                       Catch::Contains("rank 0 on gpu0001 sees 0 GPUs"));
  // A long message is one line with the whole behind a click (no script).
  Report one;
  Record slow = binding(0, 0);
  slow.message = std::string(300, 'x') + " end";
  one.checks = {slow};
  one.failure_groups = group_failures(one);
  const std::string long_html = failures_section(one);
  CHECK_THAT(long_html, Catch::Contains(R"(<details class="more"><summary>)" + std::string(300, 'x') +
                                        " end</summary></details>"));
  CHECK(index_ranges({0, 1, 2, 3, 5, 7, 8}) == "0-3,5,7-8");
}
