#include "model/port_counters.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/report.h"

namespace gpuaccept::report {
using nlohmann::json;

namespace {

// Each counter's width in the PortCounters attribute as the kernel reads it for sysfs
// (drivers/infiniband/core/sysfs.c, PORT_PMA_ATTR): the counters stop at their largest value.
const std::map<std::string, int>& counter_bits() {
  static const std::map<std::string, int> kBits = {
      {"link_downed", 8},
      {"link_error_recovery", 8},
      {"symbol_error", 16},
      {"port_rcv_errors", 16},
      {"port_rcv_remote_physical_errors", 16},
      {"port_rcv_switch_relay_errors", 16},
      {"local_link_integrity_errors", 4},
      {"excessive_buffer_overrun_errors", 4},
  };
  return kBits;
}

// One port_counters document as read, with its place in the run.
struct CounterDocument {
  std::string phase, host, start_time;
  int phase_rank = 0;
  std::size_t index = 0;  // order read: a tie-break that keeps the sort stable
  json start, end;
};

// One reading of one counter: its value and when it was taken.
struct Reading {
  std::uint64_t value = 0;
  std::size_t document = 0;  // index into the sorted documents
  std::string phase;
  bool at_start = true;

  std::string when() const { return fmt::format("the {} of {}", at_start ? "start" : "end", phase); }
};

int phase_rank(const std::string& phase) {
  const auto& known = pipeline_phases();
  return static_cast<int>(std::find(known.begin(), known.end(), phase) - known.begin());
}

std::string text_of(const json& doc, const char* key) {
  const auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A counter's value as the phases write it: a non-negative integer (or its decimal text).
std::optional<std::uint64_t> count_of(const json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s.empty() || s.size() > 19 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    return std::stoull(s);
  }
  return std::nullopt;
}

// Between two consecutive readings: "during smoke" when they are one phase's start and end.
std::string between(const Reading& a, const Reading& b) {
  if (a.document == b.document && a.at_start && !b.at_start) return "during " + b.phase;
  return fmt::format("between {} and {}", a.when(), b.when());
}

using Series = std::map<std::string, std::map<std::string, std::map<std::string, std::vector<Reading>>>>;

class Judge {
 public:
  explicit Judge(PortCounterJudgement& out) : out_(out) {}

  void read(const LoadedRun& run) {
    std::vector<CounterDocument> docs;
    for (const auto& src : run.sources) {
      const auto it = src.documents.find(kPortCountersTest);
      if (it == src.documents.end()) continue;
      for (const auto& text : it->second) {
        const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (!doc.is_object()) {
          problem("{}: a port_counters document is not a JSON object: '{}'", src.path.string(), text.substr(0, 80));
          continue;
        }
        CounterDocument d;
        d.phase = src.phase;
        d.host = text_of(doc, "host");
        d.start_time = text_of(doc, "start_time");
        d.phase_rank = phase_rank(d.phase);
        d.index = docs.size();
        if (d.host.empty()) {
          problem("{}: a port_counters document names no host", src.path.string());
          continue;
        }
        d.start = doc.contains("start") ? doc["start"] : json();
        d.end = doc.contains("end") ? doc["end"] : json();
        docs.push_back(std::move(d));
      }
    }
    out_.documents = static_cast<int>(docs.size());
    // Pipeline order; a phase run twice (smoke-2.h5) by its start time (ISO 8601 sorts as text).
    std::sort(docs.begin(), docs.end(), [](const CounterDocument& a, const CounterDocument& b) {
      return std::tie(a.phase_rank, a.start_time, a.index) < std::tie(b.phase_rank, b.start_time, b.index);
    });
    for (std::size_t i = 0; i < docs.size(); ++i) {
      add_readings(docs[i], docs[i].start, i, true);
      add_readings(docs[i], docs[i].end, i, false);
    }
  }

  void judge() {
    for (const auto& [node, ports] : series_) {
      ++out_.nodes;
      for (const auto& [port, counters] : ports) {
        bool judged = false;
        for (const auto& [counter, readings] : counters) {
          if (readings.size() < 2) continue;  // one reading shows no change
          judged = true;
          judge_counter(node, port, counter, readings);
        }
        if (judged) ++out_.ports;
      }
    }
    if (out_.documents == 0)
      out_.skipped = "no port_counters documents in this run (phases written before issue 37, or none ran)";
    else if (out_.ports == 0)
      out_.skipped = fmt::format("{} port_counters document(s), but no port with counters read twice (no RDMA port, or "
                                 "no counters readable)",
                                 out_.documents);
  }

 private:
  PortCounterJudgement& out_;
  Series series_;

  template <typename... Args>
  void problem(fmt::format_string<Args...> f, Args&&... args) {
    out_.problems.push_back(fmt::format(f, std::forward<Args>(args)...));
  }

  void add_readings(const CounterDocument& d, const json& side, std::size_t doc_index, bool at_start) {
    auto& ports = series_[d.host];  // a node with a document is a node read, ports or not
    if (side.is_null()) return;
    if (!side.is_object()) {
      problem("{} {}: port_counters '{}' is not an object of ports", d.host, d.phase, at_start ? "start" : "end");
      return;
    }
    for (const auto& [port, counters] : side.items()) {
      if (!counters.is_object()) {
        problem("{} {} port {}: its counters are not an object", d.host, d.phase, port);
        continue;
      }
      for (const auto& counter : judged_port_counters()) {
        const auto it = counters.find(counter);
        if (it == counters.end()) continue;  // not readable on this port: the phase leaves it out
        const auto value = count_of(*it);
        if (!value) {
          problem("{} {} port {} {}: '{}' is not a count", d.host, d.phase, port, counter, it->dump());
          continue;
        }
        ports[port][counter].push_back({*value, doc_index, d.phase, at_start});
      }
    }
  }

  void judge_counter(const std::string& node, const std::string& port, const std::string& counter,
                     const std::vector<Reading>& r) {
    CounterChange c;
    c.node = node;
    c.port = port;
    c.counter = counter;
    c.from = r.front().value;
    c.to = r.back().value;
    c.read_from = r.front().when();
    c.read_to = r.back().when();
    std::string reset_where;
    for (std::size_t i = 1; i < r.size(); ++i) {
      if (r[i].value > r[i - 1].value) {
        c.rise += r[i].value - r[i - 1].value;
        if (c.first_rise.empty()) {
          c.first_rise = between(r[i - 1], r[i]);
          c.phase = r[i].phase;
        }
      } else if (r[i].value < r[i - 1].value && !c.reset) {
        c.reset = true;
        reset_where = fmt::format("{} -> {} {}", r[i - 1].value, r[i].value, between(r[i - 1], r[i]));
      }
    }
    const int bits = counter_bits().at(counter);
    const std::uint64_t largest = (std::uint64_t{1} << bits) - 1;
    c.saturated = c.to >= largest;
    const std::string read = fmt::format("read from {} to {}", c.read_from, c.read_to);
    if (c.rise > 0) {
      c.level = Level::Fail;
      c.message = fmt::format("{} {} {} rose by {} ({} -> {}), first {}; {}{}", node, port, counter, c.rise, c.from,
                              c.to, c.first_rise, read, c.reset ? "; it was also reset (" + reset_where + ")" : "");
      out_.checks.push_back(fail_record(c));
    } else if (c.reset) {
      c.level = Level::Warn;
      c.phase = r.back().phase;
      c.message = fmt::format("{} {} {} went down {} (a reset: a driver reload, a reboot or counters cleared); no rise "
                              "seen, {}",
                              node, port, counter, reset_where, read);
    } else if (c.saturated) {
      c.level = Level::Warn;
      c.phase = r.back().phase;
      c.message = fmt::format("{} {} {} stands at {}, the largest value of its {}-bit counter, which stops there: a rise "
                              "during the run cannot show; clear the port's counters (perfquery -R) and run again",
                              node, port, counter, c.to, bits);
    } else {
      return;  // did not move
    }
    out_.changes.push_back(std::move(c));
  }

  static Record fail_record(const CounterChange& c) {
    Record r;
    r.phase = c.phase;
    r.rank = kJobLevel;  // the report's own check, about the node it names
    r.node = c.node;
    r.test = kPortCountersTest;
    r.metric = "increase";
    r.value = static_cast<double>(c.rise);
    r.unit = "count";
    r.params = {{"port", c.port}, {"counter", c.counter}};
    r.status = Status::Fail;
    r.message = c.message;
    return r;
  }
};

}  // namespace

const std::vector<std::string>& judged_port_counters() {
  static const std::vector<std::string> kCounters = [] {
    std::vector<std::string> names;
    for (const auto& [name, bits] : counter_bits()) names.push_back(name);
    return names;
  }();
  return kCounters;
}

Level PortCounterJudgement::level() const {
  Level l = Level::Pass;
  for (const auto& c : changes) l = worst(l, c.level);
  if (l == Level::Pass && !skipped.empty()) return Level::Skip;
  return l;
}

PortCounterJudgement judge_port_counters(const LoadedRun& run) {
  PortCounterJudgement out;
  Judge judge(out);
  judge.read(run);
  judge.judge();
  return out;
}

}  // namespace gpuaccept::report
