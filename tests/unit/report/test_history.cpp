#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "../fresh_dir.h"
#include "model/headline.h"
#include "output/history.h"
#include "output/metrics_text.h"

using namespace gpuaccept;
using namespace gpuaccept::report;
namespace fs = std::filesystem;

namespace {

Record measurement(const std::string& phase, const std::string& test, const std::string& metric, double value,
                   Params params, const std::string& node = "n1") {
  Record r;
  r.phase = phase;
  r.test = test;
  r.metric = metric;
  r.value = value;
  r.params = std::move(params);
  r.node = node;
  r.rank = 0;
  return r;
}

HistoryRow row(const std::string& run, const std::string& dir, const std::string& verdict,
               std::vector<std::string> nodes, std::vector<std::string> drain = {}) {
  HistoryRow r;
  r.run = run;
  r.run_dir = dir;
  r.verdict = verdict;
  r.nodes = std::move(nodes);
  r.drain = std::move(drain);
  r.figures = {{"gemm_tflops", "TFLOP/s", {{"dtype", "bf16"}, {"stat", "min"}}, 700.5}};
  return r;
}

}  // namespace

TEST_CASE("headline: busbw at the largest message, the lowest record there") {
  const auto f = headline_figures({
      measurement("nccl-scaling", "all_reduce", "busbw", 100, {{"bytes", "1024"}, {"scale", "all"}, {"ranks", "16"}}),
      measurement("nccl-scaling", "all_reduce", "busbw", 400, {{"bytes", "1073741824"}, {"scale", "all"}, {"ranks", "16"}}),
      measurement("nccl-scaling", "all_reduce", "busbw", 380, {{"bytes", "1073741824"}, {"scale", "all"}, {"ranks", "16"}}),
      measurement("nccl-scaling", "all_reduce", "busbw", 50, {{"bytes", "1073741824"}, {"scale", "gpu_pair"}}),
  });
  REQUIRE(f.size() == 1);  // gpu_pair is not a headline scale
  CHECK(f[0].name == "nccl_busbw");
  CHECK(f[0].value == 380);
  CHECK(labels_text(f[0]) == "all_reduce scale=all ranks=16");
}

TEST_CASE("headline: GEMM at the largest size, median and min over GPUs; a SKIP is no figure") {
  auto skipped = measurement("smoke", "gemm", "tflops", 1, {{"dtype", "bf16"}, {"m", "16384"}, {"n", "16384"}, {"k", "16384"}});
  skipped.status = Status::Skip;
  const auto f = headline_figures({
      measurement("smoke", "gemm", "tflops", 500, {{"dtype", "bf16"}, {"m", "4096"}, {"n", "4096"}, {"k", "4096"}}),
      measurement("smoke", "gemm", "tflops", 700, {{"dtype", "bf16"}, {"m", "8192"}, {"n", "8192"}, {"k", "8192"}}),
      measurement("smoke", "gemm", "tflops", 720, {{"dtype", "bf16"}, {"m", "8192"}, {"n", "8192"}, {"k", "8192"}}),
      measurement("smoke", "gemm", "tflops", 600, {{"dtype", "bf16"}, {"m", "8192"}, {"n", "8192"}, {"k", "8192"}}),
      skipped,
  });
  REQUIRE(f.size() == 2);
  CHECK(f[0].value == 700);  // median of 600, 700, 720
  CHECK(f[1].value == 600);
  CHECK(labels_text(f[1]) == "bf16 stat=min");
}

TEST_CASE("metrics: the text parses as the format says, label values escaped") {
  Report r;
  r.tool_version = "0.1.0";
  r.grid.nodes = {"gpu01", "odd\"node\\name"};
  r.node_actions.drain = {{"gpu01", "FAIL x", 1}};
  r.headlines = {{"nccl_busbw", "GB/s", {{"collective", "all_reduce"}, {"scale", "all"}, {"ranks", "16"}}, 412.5}};
  const std::string t = metrics_text(r, "123", 1.7e9);
  CHECK(t.find("gpuaccept_nccl_busbw_gbytes_per_second{collective=\"all_reduce\",scale=\"all\",ranks=\"16\"} 412.5\n") !=
        std::string::npos);
  CHECK(t.find("gpuaccept_node_state{node=\"gpu01\",state=\"drain\"} 1\n") != std::string::npos);
  CHECK(t.find("gpuaccept_node_state{node=\"odd\\\"node\\\\name\",state=\"ok\"} 1\n") != std::string::npos);
  CHECK(t.find("# TYPE gpuaccept_nccl_busbw_gbytes_per_second gauge\n") != std::string::npos);
  CHECK(t.ends_with("# EOF\n"));
}

TEST_CASE("history: rows round-trip; a damaged line is skipped and named") {
  const fs::path dir = testing::fresh_dir("history");
  const fs::path file = dir / "history.jsonl";
  append_history(file, row("1", "/r/1", "PASS", {"n1", "n2"}));
  { std::ofstream(file, std::ios::app) << "{\"run\": \"cut off"; }  // a crash mid-line, by hand
  append_history(file, row("2", "/r/2", "FAIL", {"n1", "n2"}, {"n2"}));
  const History h = read_history(file);
  REQUIRE(h.rows.size() == 2);
  CHECK(h.rows[1].run == "2");
  CHECK(h.rows[1].drain == std::vector<std::string>{"n2"});
  REQUIRE(h.rows[0].figures.size() == 1);
  CHECK(h.rows[0].figures[0].value == 700.5);
  REQUIRE(h.problems.size() == 1);
  CHECK(h.problems[0].find("history.jsonl:2:") != std::string::npos);
  CHECK(read_history(dir / "none.jsonl").rows.empty());
}

TEST_CASE("history: reports appending at once lose no row") {
  const fs::path dir = testing::fresh_dir("history-concurrent");
  const fs::path file = dir / "history.jsonl";
  constexpr int kWriters = 6, kRows = 15;
  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (int i = 0; i < kRows; ++i) append_history(file, row(std::to_string(w * 100 + i), "/r", "PASS", {"n1"}));
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    CHECK(WIFEXITED(status));
  }
  const History h = read_history(file);
  CHECK(h.problems.empty());
  CHECK(h.rows.size() == kWriters * kRows);
}

TEST_CASE("history: --baseline auto is the newest PASS on the same nodes that still exists") {
  const fs::path dir = testing::fresh_dir("history-baseline");
  for (const char* d : {"a", "b", "c", "d"}) fs::create_directories(dir / d);
  History h;
  h.rows = {row("a", (dir / "a").string(), "PASS", {"n1", "n2"}), row("b", (dir / "b").string(), "PASS", {"n2", "n1"}),
            row("c", (dir / "c").string(), "FAIL", {"n1", "n2"}), row("d", (dir / "d").string(), "PASS", {"n1"}),
            row("gone", (dir / "gone").string(), "PASS", {"n1", "n2"})};
  CHECK(auto_baseline(h, {"n1", "n2"}, dir / "now") == dir / "b");
  CHECK(auto_baseline(h, {"n1", "n2"}, dir / "b") == dir / "a");  // never the run itself
  CHECK(auto_baseline(h, {"n3"}, dir / "now") == std::nullopt);
}
