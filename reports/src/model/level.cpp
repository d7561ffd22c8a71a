#include "model/level.h"

namespace gpuaccept::report {

Level level_of(Status s) {
  switch (s) {
    case Status::Pass: return Level::Pass;
    case Status::Skip: return Level::Skip;
    case Status::Fail: return Level::Fail;
    case Status::Error: return Level::Error;
  }
  return Level::Error;
}

Level level_of(RuleOutcome o) {
  switch (o) {
    case RuleOutcome::Pass: return Level::Pass;
    case RuleOutcome::NotApplied: return Level::Skip;  // the floor did not hold for this GPU: the message says why
    case RuleOutcome::NoData: return Level::Skip;
    case RuleOutcome::Warn: return Level::Warn;
    case RuleOutcome::Fail: return Level::Fail;
  }
  return Level::Fail;
}

Level worst(Level a, Level b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

void LevelTally::add(const LevelTally& other) {
  for (const auto& [l, n] : other.counts) add(l, n);
}

int LevelTally::count(Level l) const {
  const auto it = counts.find(l);
  return it == counts.end() ? 0 : it->second;
}

int LevelTally::total() const {
  int n = 0;
  for (const auto& [l, c] : counts) n += c;
  return n;
}

Level LevelTally::summary() const {
  for (Level l : {Level::Error, Level::Fail, Level::Warn, Level::Pass})
    if (count(l) > 0) return l;
  return Level::Skip;
}

bool fails_run(Level l) { return l == Level::Fail || l == Level::Error; }

std::string_view to_string(Level l) {
  switch (l) {
    case Level::Pass: return "PASS";
    case Level::Skip: return "SKIP";
    case Level::Warn: return "WARN";
    case Level::Fail: return "FAIL";
    case Level::Error: return "ERROR";
  }
  return "ERROR";
}

std::string_view css_class(Level l) {
  switch (l) {
    case Level::Pass: return "pass";
    case Level::Skip: return "skip";
    case Level::Warn: return "warn";
    case Level::Fail: return "fail";
    case Level::Error: return "error";
  }
  return "error";
}

}  // namespace gpuaccept::report
