#include <catch2/catch.hpp>

#include "model/report.h"
#include "output/junit_xml.h"
#include "output/summary_json.h"

using namespace gpuaccept;
using namespace gpuaccept::report;

namespace {

// A report of two records (one hostile, one failing) and one flagged rule verdict.
Report hostile_report() {
  Report rep;
  rep.run_dir = "/results/run<1>";
  rep.generated_at = "2026-11-20T10:00:00Z";
  Record hostile;
  hostile.phase = "discover";
  hostile.node = "<script>alert(1)</script>";
  hostile.test = "gpus_per_node";
  hostile.message = "4 GPUs \"present\" & <b>fine</b>\x01";
  Record failed = hostile;
  failed.node = "gpa-node1";
  failed.status = Status::Fail;
  failed.message = "3 GPUs present, 4 expected <sic>";
  Record skipped = failed;
  skipped.status = Status::Skip;
  skipped.message = "nothing to compare";
  rep.checks = {hostile, failed, skipped};
  RuleVerdict v;
  v.rule.name = "gpus<4>";
  v.rule.phase = "discover";
  v.check = RuleCheck::Min;
  v.outcome = RuleOutcome::Warn;
  v.record = hostile;
  v.message = "a <warning>";
  rep.verdicts = {v};
  PhaseSummary p;
  p.phase = "discover";
  rep.phases = {p};
  return rep;
}

}  // namespace

TEST_CASE("JUnit XML escapes names, attributes and messages", "[junit]") {
  const std::string xml = junit_xml(hostile_report());
  CHECK(xml.find("<script") == std::string::npos);
  CHECK(xml.find("<b>") == std::string::npos);
  CHECK(xml.find("<sic>") == std::string::npos);
  CHECK(xml.find('\x01') == std::string::npos);
  CHECK_THAT(xml, Catch::Contains("gpus_per_node @ &lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK_THAT(xml, Catch::Contains(R"(name="gpuaccept /results/run&lt;1&gt;")"));
  CHECK_THAT(xml, Catch::Contains("4 GPUs &quot;present&quot; &amp; &lt;b&gt;fine&lt;/b&gt;"));
}

TEST_CASE("JUnit XML maps levels to failure, skipped and system-out", "[junit]") {
  const std::string xml = junit_xml(hostile_report());
  CHECK_THAT(xml, Catch::Contains(R"(<failure message="3 GPUs present, 4 expected &lt;sic&gt;" type="FAIL">)"));
  CHECK_THAT(xml, Catch::Contains(R"(<skipped message="nothing to compare"/>)"));
  CHECK_THAT(xml, Catch::Contains("<system-out>WARN: a &lt;warning&gt;</system-out>"));
  CHECK_THAT(xml, Catch::Contains(R"(tests="4" failures="1" errors="0" skipped="1")"));
}

TEST_CASE("summary.json survives invalid UTF-8 in a record", "[summary]") {
  Report rep = hostile_report();
  rep.checks[0].message = "bad \xff\xfe bytes";
  const std::string text = summary_json_text(rep);
  const auto j = nlohmann::json::parse(text);
  CHECK(j.at("checks").size() == 3);
  CHECK(j.at("checks")[1].at("status") == "FAIL");
  CHECK(j.at("failures").size() == 2);  // the WARN verdict and the FAIL check
}
