// Flags, config keys and profiles: precedence, nccl-tests' size syntax, the quick profile's
// iteration counts, and errors that name what to fix.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "nccl-scaling/options.h"

using namespace gpuaccept;
using namespace gpuaccept::nccl_scaling;

namespace {

Options resolve(const std::string& flags, const std::string& yaml = "") {
  CLI::App app;
  CliValues cli;
  add_cli_options(app, cli);
  app.parse(flags, false);
  return resolve_options(cli, yaml.empty() ? Config{} : Config::parse(yaml, "test.yaml"));
}

}  // namespace

TEST_CASE("sizes in nccl-tests' syntax") {
  CHECK(parse_size("8") == 8u);
  CHECK(parse_size("1K") == 1024u);
  CHECK(parse_size("64M") == (64u << 20));
  CHECK(parse_size("8G") == (std::size_t{8} << 30));
  CHECK(parse_size("8g") == (std::size_t{8} << 30));
  CHECK(parse_size("8GiB") == (std::size_t{8} << 30));
  CHECK(parse_size("256MB") == (256u << 20));
  CHECK(parse_size("1.5K") == 1536u);
  CHECK(parse_size("8B") == 8u);
  CHECK_FALSE(parse_size(""));
  CHECK_FALSE(parse_size("G"));
  CHECK_FALSE(parse_size("8X"));
  CHECK_FALSE(parse_size("-1"));
  CHECK_FALSE(parse_size("eight"));
}

TEST_CASE("the size sweep is nccl-tests' -b/-e/-f loop") {
  const auto s = size_sweep(8, std::size_t{8} << 30, 2);
  CHECK(s.size() == 31);
  CHECK(s.front() == 8);
  CHECK(s.back() == (std::size_t{8} << 30));
  CHECK(size_sweep(1024, 1000, 2).empty());
  CHECK(size_sweep(8, 100, 4) == std::vector<std::size_t>{8, 32});
}

TEST_CASE("defaults: quick profile, every collective, float and bf16, all scales") {
  const Options o = resolve("");
  CHECK(o.profile == Profile::Quick);
  CHECK(o.min_bytes == 8);
  CHECK(o.max_bytes == (std::size_t{8} << 30));
  CHECK(o.iters == 20);
  CHECK(o.warmup_iters == 5);
  CHECK(o.batches == 3);
  CHECK(o.collectives.size() == 7);
  CHECK(o.dtypes == std::vector<Dtype>{Dtype::Float, Dtype::Bf16});
  CHECK(o.scales.size() == 6);
  CHECK(o.scales.back() == Scale::HcaLoopback);
  CHECK(o.scale_budget_s == 60);
  CHECK(o.timeout_s == 120);
  CHECK(o.check);
  CHECK_FALSE(o.nonblocking);
  CHECK(o.pair_outlier_pct == 15);
}

TEST_CASE("quick shrinks iterations above 256 MiB; full does not") {
  const Options quick = resolve("");
  CHECK(iter_plan(quick, 1 << 20).iters == 20);
  CHECK(iter_plan(quick, 256 << 20).iters == 20);
  CHECK(iter_plan(quick, std::size_t{512} << 20).iters == 10);
  CHECK(iter_plan(quick, std::size_t{8} << 30).iters == 2);
  CHECK(iter_plan(quick, std::size_t{8} << 30).warmup == 2);
  CHECK(iter_plan(quick, std::size_t{8} << 30).batches == 3);
  const Options full = resolve("--profile full");
  CHECK(full.batches == 5);
  CHECK(full.scale_budget_s == 1200);
  CHECK(resolve("--scale-budget 0").scale_budget_s == 0);  // no budget
  CHECK(iter_plan(full, std::size_t{8} << 30).iters == 20);
  CHECK(iter_plan(full, std::size_t{8} << 30).warmup == 5);
}

TEST_CASE("flags beat the config, the config beats the defaults") {
  const std::string yaml = R"(
nccl:
  min_bytes: 1M
  max_bytes: 1073741824
  iters: 50
  timeout_s: 30
  collectives: [all_gather, all_reduce]
  dtypes: [bf16]
  scales: [node_pair, intra_node]
  pair_outlier_pct: 10
  nonblocking: true
  check: false
)";
  Options o = resolve("", yaml);
  CHECK(o.min_bytes == (1u << 20));
  CHECK(o.max_bytes == (1u << 30));
  CHECK(o.iters == 50);
  CHECK(o.timeout_s == 30);
  CHECK(o.collectives == std::vector<std::string>{"all_gather", "all_reduce"});
  CHECK(o.dtypes == std::vector<Dtype>{Dtype::Bf16});
  CHECK(o.scales == std::vector<Scale>{Scale::IntraNode, Scale::NodePair});  // run order, not given order
  CHECK(o.pair_outlier_pct == 10);
  CHECK(o.nonblocking);
  CHECK_FALSE(o.check);

  o = resolve("-b 8 -e 64M -n 7 -w 1 --timeout 10 --collectives sendrecv --dtypes float -c 1", yaml);
  CHECK(o.min_bytes == 8);
  CHECK(o.max_bytes == (64u << 20));
  CHECK(o.iters == 7);
  CHECK(o.warmup_iters == 1);
  CHECK(o.timeout_s == 10);
  CHECK(o.collectives == std::vector<std::string>{"sendrecv"});
  CHECK(o.dtypes == std::vector<Dtype>{Dtype::Float});
  CHECK(o.check);
}

TEST_CASE("bad values say what is wrong") {
  CHECK_THROWS_WITH(resolve("--collectives allreduce"), Catch::Contains("unknown collective 'allreduce'"));
  CHECK_THROWS_WITH(resolve("--dtypes fp8"), Catch::Contains("unknown dtype"));
  CHECK_THROWS_WITH(resolve("--scales rack"), Catch::Contains("unknown scale"));
  CHECK_THROWS_WITH(resolve("--scale-budget -1"), Catch::Contains("scale budget"));
  CHECK_THROWS_WITH(resolve("-b 1G -e 1M"), Catch::Contains("min bytes"));
  CHECK_THROWS_WITH(resolve("-b 8Q"), Catch::Contains("not a size"));
  CHECK_THROWS_WITH(resolve("-f 1"), Catch::Contains("step factor"));
  CHECK_THROWS_WITH(resolve("--profile slow"), Catch::Contains("quick or full"));
  CHECK_THROWS_WITH(resolve("", "nccl:\n  max_bytes: lots\n"), Catch::Contains("test.yaml"));
  CHECK_THROWS_AS(resolve("--timeout 0"), InputError);
}

TEST_CASE("hidden fault-injection flags parse") {
  const Options o = resolve("--debug-kill-rank 3 --debug-kill-after-steps 12");
  CHECK(o.debug_fault.kill_rank == 3);
  CHECK(o.debug_fault.after_steps == 12);
  CHECK(o.debug_fault.hang_rank == -1);
}
