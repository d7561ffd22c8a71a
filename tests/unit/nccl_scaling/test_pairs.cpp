// Judging the pairwise tests: outliers against the median, wrong data, the suspect end,
// and the matrix the report log shows.
#include <catch2/catch.hpp>

#include "nccl-scaling/pairs.h"

using namespace gpuaccept;
using namespace gpuaccept::nccl_scaling;

namespace {

PairResult pair(std::string a, std::string b, double busbw) {
  PairResult p;
  p.a = std::move(a);
  p.b = std::move(b);
  p.ranks = 2;
  p.measured = true;
  p.busbw = busbw;
  return p;
}

}  // namespace

TEST_CASE("a pair far below the median fails and is named") {
  const std::vector<PairResult> r = {pair("n1", "n2", 100), pair("n3", "n4", 98), pair("n1", "n3", 101),
                                     pair("n2", "n4", 70)};
  double median = 0;
  const auto v = judge_pairs(r, 15, &median);
  CHECK(median == Approx(99));
  CHECK(v[0].status == Status::Pass);
  CHECK(v[1].status == Status::Pass);
  CHECK(v[2].status == Status::Pass);
  REQUIRE(v[3].status == Status::Fail);
  CHECK(v[3].message.find("n2 - n4") != std::string::npos);
  CHECK(v[3].message.find("below the median") != std::string::npos);
  // Within the limit: 90 is 9% below 99.
  CHECK(judge_pairs({pair("a", "b", 99), pair("c", "d", 99), pair("a", "c", 90)}, 15, nullptr)[2].status ==
        Status::Pass);
}

TEST_CASE("wrong data or no figure fails regardless of speed") {
  auto bad = pair("n1", "n2", 200);
  bad.wrong = 12;
  PairResult missing;
  missing.a = "n3";
  missing.b = "n4";
  missing.error = "timed out";
  const auto v = judge_pairs({bad, pair("n1", "n3", 100), missing}, 15, nullptr);
  CHECK(v[0].status == Status::Fail);
  CHECK(v[0].message.find("12 wrong") != std::string::npos);
  CHECK(v[1].status == Status::Pass);
  CHECK(v[2].status == Status::Fail);
  CHECK(v[2].message.find("timed out") != std::string::npos);
}

TEST_CASE("the end in most slow pairs is named as the suspect") {
  // node3's link is bad: every pair with node3 is slow.
  std::vector<PairResult> r;
  const std::vector<std::string> nodes = {"node1", "node2", "node3", "node4"};
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (std::size_t j = i + 1; j < nodes.size(); ++j)
      r.push_back(pair(nodes[i], nodes[j], (nodes[i] == "node3" || nodes[j] == "node3") ? 40 : 100));
  const auto v = judge_pairs(r, 15, nullptr);
  int failed = 0;
  for (std::size_t k = 0; k < r.size(); ++k) {
    if (v[k].status != Status::Fail) continue;
    ++failed;
    CHECK(v[k].message.find("node3 is in 3 of its 3 pairs that failed") != std::string::npos);
    CHECK(v[k].message.find("node1 is in") == std::string::npos);
  }
  CHECK(failed == 3);
}

TEST_CASE("GPU pairs are named with their node") {
  auto p = pair("0", "3", 10);
  p.node = "gpa-node2";
  const auto v = judge_pairs({pair("0", "1", 100), pair("1", "2", 100), p}, 15, nullptr);
  CHECK(v[2].message.find("gpa-node2 GPU 0 - GPU 3") != std::string::npos);
}

TEST_CASE("the matrix shows every pair, marks failures, and shrinks to a list when large") {
  const std::vector<PairResult> r = {pair("a", "b", 100.04), pair("a", "c", 20), pair("b", "c", 99)};
  const auto v = judge_pairs(r, 15, nullptr);
  const std::string m = format_pair_matrix({"a", "b", "c"}, r, v);
  CHECK(m.find("100.0") != std::string::npos);
  CHECK(m.find("20.0*") != std::string::npos);
  CHECK(m.find("99.0") != std::string::npos);
  CHECK(m.find("  a\n") != std::string::npos);

  std::vector<std::string> many;
  std::vector<PairResult> rr;
  for (int i = 0; i < 40; ++i) many.push_back("n" + std::to_string(i));
  for (int i = 0; i + 1 < 40; i += 2) rr.push_back(pair(many[i], many[i + 1], i == 10 ? 1 : 100));
  const auto vv = judge_pairs(rr, 15, nullptr);
  const std::string list = format_pair_matrix(many, rr, vv);
  CHECK(list.find("n10 - n11") != std::string::npos);
  CHECK(list.find("n0 - n1") == std::string::npos);
}
