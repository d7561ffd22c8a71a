#include "output/junit_xml.h"

#include <algorithm>

#include <fmt/format.h>

#include "html/html_escape.h"
#include "thresholds/record_label.h"

namespace gpuaccept::report {

namespace {

struct TestCase {
  std::string name, classname;
  Level level = Level::Pass;
  std::string message;
};

struct Suite {
  std::string name;
  std::vector<TestCase> cases;
  int count(Level l) const {
    int n = 0;
    for (const auto& c : cases) n += c.level == l ? 1 : 0;
    return n;
  }
};

TestCase check_case(const Record& r) {
  std::string name = measurement_label(r);
  if (!r.metric.empty()) name += " " + r.metric;
  return {fmt::format("{} @ {}", name, place_label(r)), "gpuaccept." + r.phase, level_of(r.status), r.message};
}

TestCase rule_case(const RuleVerdict& v) {
  const std::string where = v.record ? fmt::format(": {} @ {}", measurement_label(*v.record), place_label(*v.record)) : "";
  return {fmt::format("rule {} {}{}", v.rule.name, to_string(v.check), where), "gpuaccept." + v.rule.phase + ".rules",
          level_of(v.outcome), v.message};
}

std::string case_xml(const TestCase& c) {
  std::string body;
  const std::string msg = html_escape(c.message);
  switch (c.level) {
    case Level::Fail: body = fmt::format(R"(<failure message="{0}" type="FAIL">{0}</failure>)", msg); break;
    case Level::Error: body = fmt::format(R"(<error message="{0}" type="ERROR">{0}</error>)", msg); break;
    case Level::Skip: body = fmt::format(R"(<skipped message="{}"/>)", msg); break;
    case Level::Warn: body = fmt::format("<system-out>WARN: {}</system-out>", msg); break;
    case Level::Pass:
      if (!msg.empty()) body = fmt::format("<system-out>{}</system-out>", msg);
      break;
  }
  return fmt::format(R"(    <testcase name="{}" classname="{}" time="0">{}</testcase>)", html_escape(c.name),
                     html_escape(c.classname), body) +
         "\n";
}

}  // namespace

std::string junit_xml(const Report& r) {
  std::vector<Suite> suites;
  auto suite_for = [&](const std::string& phase) -> Suite& {
    for (auto& s : suites)
      if (s.name == phase) return s;
    suites.push_back({phase, {}});
    return suites.back();
  };
  for (const auto& p : r.phases) suite_for(p.phase);
  for (const auto& c : r.checks) suite_for(c.phase).cases.push_back(check_case(c));
  for (const auto& v : r.verdicts)
    if (v.outcome != RuleOutcome::NoData || std::any_of(r.phases.begin(), r.phases.end(),
                                                        [&](const auto& p) { return p.phase == v.rule.phase; }))
      suite_for(v.rule.phase).cases.push_back(rule_case(v));

  int tests = 0, failures = 0, errors = 0, skipped = 0;
  std::string body;
  for (const auto& s : suites) {
    tests += static_cast<int>(s.cases.size());
    failures += s.count(Level::Fail);
    errors += s.count(Level::Error);
    skipped += s.count(Level::Skip);
    body += fmt::format(R"(  <testsuite name="{}" tests="{}" failures="{}" errors="{}" skipped="{}" time="0" timestamp="{}">)",
                        html_escape(s.name), s.cases.size(), s.count(Level::Fail), s.count(Level::Error),
                        s.count(Level::Skip), html_escape(r.generated_at)) +
            "\n";
    for (const auto& c : s.cases) body += case_xml(c);
    body += "  </testsuite>\n";
  }
  return fmt::format(R"(<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="gpuaccept {}" tests="{}" failures="{}" errors="{}" skipped="{}" time="0">
{}</testsuites>
)",
                     html_escape(r.run_dir), tests, failures, errors, skipped, body);
}

}  // namespace gpuaccept::report
