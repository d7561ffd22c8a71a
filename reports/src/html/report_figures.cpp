#include "html/report_figures.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "thresholds/record_label.h"

namespace gpuaccept::report {

namespace {

std::optional<double> numeric_param(const Record& r, const char* key) {
  const auto it = r.params.find(key);
  if (it == r.params.end()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || end != it->second.data() + it->second.size()) return std::nullopt;
  return v;
}

std::string param_or(const Record& r, const char* key, const char* fallback) {
  const auto it = r.params.find(key);
  return it == r.params.end() ? fallback : it->second;
}

// Points of one line: the lowest value at each x, and how many records shared an x.
struct SeriesBuilder {
  std::map<double, double> lowest;
  int most_at_one_x = 0;
  std::map<double, int> count;

  void add(double x, double y) {
    const auto [it, inserted] = lowest.emplace(x, y);
    if (!inserted) it->second = std::min(it->second, y);
    most_at_one_x = std::max(most_at_one_x, ++count[x]);
  }
  ChartSeries build(std::string name) const {
    ChartSeries s;
    s.name = std::move(name);
    s.points.assign(lowest.begin(), lowest.end());
    return s;
  }
};

LineChart line_chart_of(std::string title, std::string x_label, std::string y_label, bool bytes_x,
                        const std::map<std::string, SeriesBuilder>& series) {
  LineChart c;
  c.title = std::move(title);
  c.x_label = std::move(x_label);
  c.y_label = std::move(y_label);
  c.log2_x = true;
  c.x_format = bytes_x ? AxisFormat::Bytes : AxisFormat::Number;
  int most = 1;
  for (const auto& [name, b] : series) {
    c.series.push_back(b.build(name));
    most = std::max(most, b.most_at_one_x);
  }
  if (most > 1) c.note = fmt::format("up to {} records per point (one per node): the lowest is drawn", most);
  return c;
}

int node_order(const Report& rep, const std::string& node) { return rep.grid.row(node); }

// Bar charts per GPU (or per node): up to kMaxBars bars, one per GPU (node); past that, one
// per node (its lowest GPU), the kMaxNodeBars lowest nodes.
constexpr std::size_t kMaxBars = 256;
constexpr std::size_t kMaxNodeBars = 64;

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A record's bar, coloured by its own status and the rules that judged it; `place` starts the
// tooltip ("gpa-node1 GPU 2", "rank 3 on gpa-node1").
Bar bar_of(const Report& rep, const Record& r, std::string label, const std::string& place) {
  Bar b;
  b.label = std::move(label);
  b.value = r.value;
  b.level = worst(level_of(r.status), rep.rule_level(r));
  b.tooltip = fmt::format("{}: {} {} ({})", place, format_value(r.value), r.unit, to_string(b.level));
  return b;
}

// The fleet median of all the chart's values (bars cut from a large fleet included) as a
// reference line; none for a single value.
void add_median(BarChart& c, const std::vector<double>& values) {
  if (values.size() > 1) c.references.push_back({median_of(values), fmt::format("median {}", format_value(median_of(values)))});
}

// The bounds of the absolute rules (min, max) that judged the chart's records, one line each.
template <typename InChart>
void add_rule_bounds(BarChart& c, const Report& rep, const InChart& in_chart) {
  std::set<std::pair<double, std::string>> bounds;
  for (const auto& v : rep.verdicts)
    if (v.record && (v.check == RuleCheck::Min || v.check == RuleCheck::Max) && in_chart(*v.record))
      bounds.insert({v.bound, fmt::format("{} {}", to_string(v.check), format_bound(v.bound))});
  for (const auto& [value, label] : bounds) c.references.push_back({value, label});
}

// Each node's lowest record (acceptance is about the worst), by node name.
std::vector<const Record*> lowest_per_node(const std::vector<const Record*>& records) {
  std::map<std::string, const Record*> lowest;
  for (const Record* r : records)
    if (auto [it, fresh] = lowest.emplace(r->node, r); !fresh && r->value < it->second->value) it->second = r;
  std::vector<const Record*> out;
  for (const auto& [node, r] : lowest) out.push_back(r);
  return out;
}

// Past kMaxNodeBars, the lowest nodes only; returns how many there were.
std::size_t keep_lowest_nodes(std::vector<const Record*>& records) {
  std::sort(records.begin(), records.end(), [](const Record* a, const Record* b) { return a->value < b->value; });
  const std::size_t nodes = records.size();
  if (records.size() > kMaxNodeBars) records.resize(kMaxNodeBars);
  return nodes;
}

}  // namespace

std::vector<LineChart> nccl_busbw_charts(const Report& rep) {
  std::map<std::string, std::map<std::string, SeriesBuilder>> by_test;  // test -> series -> points
  for (const auto& r : rep.checks) {
    if (r.phase != "nccl-scaling" || r.metric != "busbw" || !r.has_value()) continue;
    const auto bytes = numeric_param(r, "bytes");
    if (!bytes || *bytes <= 0) continue;  // pair_busbw and the like have no size sweep
    const auto ranks = r.params.find("ranks");
    const std::string series = param_or(r, "scale", "?") +
                               (ranks == r.params.end() ? std::string() : fmt::format(" · {} ranks", ranks->second));
    by_test[r.test][series].add(*bytes, r.value);
  }
  std::vector<LineChart> out;
  for (const auto& [test, series] : by_test)
    out.push_back(line_chart_of(fmt::format("{} busbw", test), "message size (bytes)", "busbw (GB/s)", true, series));
  return out;
}

std::vector<BarChart> per_gpu_charts(const Report& rep, const std::string& phase, const std::string& test,
                                     const std::string& metric) {
  // One chart per measurement as a reviewer names it (title_label): GPUs whose GEMM chose
  // another algorithm or took more samples are still the same "bf16 GEMM 8192³".
  std::map<std::string, std::vector<const Record*>> groups;
  for (const auto& r : rep.checks)
    if (r.phase == phase && r.test == test && r.metric == metric && r.has_value() && r.gpu_index >= 0)
      groups[title_label(r)].push_back(&r);

  std::vector<BarChart> out;
  for (auto& [title, records] : groups) {
    std::sort(records.begin(), records.end(), [&](const Record* a, const Record* b) {
      const int na = node_order(rep, a->node), nb = node_order(rep, b->node);
      return na != nb ? na < nb : a->gpu_index < b->gpu_index;
    });
    BarChart c;
    c.title = fmt::format("{} per GPU", title);
    std::set<std::string> details;
    std::vector<double> values;
    for (const Record* r : records) {
      details.insert(measurement_label(*r));
      values.push_back(r->value);
    }
    c.details = fmt::format("{}", fmt::join(details, "; "));
    c.y_label = fmt::format("{} ({})", metric, records.front()->unit);
    if (records.size() > kMaxBars) {
      // A bar per GPU stops being readable (and costs megabytes of SVG) long before 8,192
      // GPUs; acceptance is about the worst, so: each node's lowest GPU, the lowest nodes.
      records = lowest_per_node(records);
      const std::size_t nodes = keep_lowest_nodes(records);
      c.title = fmt::format("{}: the lowest GPU of each node{}", title,
                            nodes > records.size() ? fmt::format(", the {} lowest of {} nodes", records.size(), nodes) : "");
    }
    for (const Record* r : records) c.bars.push_back(bar_of(rep, *r, fmt::format("{}:{}", r->node, r->gpu_index), place_label(*r)));
    add_rule_bounds(c, rep, [&](const Record& r) {
      return r.phase == phase && r.test == test && r.metric == metric && title_label(r) == title;
    });
    add_median(c, values);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<LineChart> training_charts(const Report& rep, const std::string& phase, const std::string& label) {
  // The training phases' records (phases/ddp/README.md, phases/fsdp-lora/README.md): throughput
  // per GPU and scaling efficiency at each GPU count trained on, and the loss per step.
  std::map<std::string, SeriesBuilder> rate, efficiency, loss;
  for (const auto& r : rep.checks) {
    if (r.phase != phase || !r.has_value()) continue;
    if (r.test == "loss_curve" && r.metric == "loss") {
      if (const auto step = numeric_param(r, "step"))
        loss[param_or(r, "scope", "mean over ranks") + (r.params.count("run") ? " (" + r.params.at("run") + ")" : "")]
            .add(*step, r.value);
      continue;
    }
    const auto gpus = numeric_param(r, "gpus");
    if (!gpus || *gpus <= 0) continue;
    if (r.test == "throughput" && r.metric == "tokens_per_s_per_gpu") rate["tokens/s per GPU"].add(*gpus, r.value);
    if (r.test == "scaling" && r.metric == "efficiency") efficiency["vs each GPU alone"].add(*gpus, r.value);
    if (r.test == "scaling" && r.metric == "efficiency_vs_slowest")
      efficiency["vs the slowest GPU alone"].add(*gpus, r.value);
  }
  std::vector<LineChart> out;
  if (!rate.empty())
    out.push_back(line_chart_of(label + " training throughput per GPU", "GPUs", "tokens/s per GPU", false, rate));
  if (!efficiency.empty())
    out.push_back(line_chart_of(label + " scaling efficiency", "GPUs", "scaling efficiency (%)", false, efficiency));
  if (!loss.empty()) {
    LineChart c = line_chart_of(label + " training loss", "step", "loss (nats)", false, loss);
    c.log2_x = false;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<BarChart> per_rank_charts(const Report& rep, const std::string& phase, const std::string& test,
                                      const std::string& metric, const std::string& title) {
  std::vector<const Record*> records;
  for (const auto& r : rep.checks)
    if (r.phase == phase && r.test == test && r.metric == metric && r.has_value() && r.rank >= 0) records.push_back(&r);
  if (records.empty()) return {};
  std::sort(records.begin(), records.end(), [](const Record* a, const Record* b) { return a->rank < b->rank; });
  BarChart c;
  c.title = title;
  c.details = fmt::format("{} {} {}", phase, test, metric);
  c.y_label = fmt::format("{} ({})", metric, records.front()->unit);
  std::vector<double> values;
  for (const Record* r : records) {
    c.bars.push_back(bar_of(rep, *r, fmt::format("{}:r{}", r->node, r->rank), fmt::format("rank {} on {}", r->rank, r->node)));
    values.push_back(r->value);
  }
  add_median(c, values);
  return {std::move(c)};
}

std::vector<BarChart> per_node_charts(const Report& rep, const std::string& phase, const std::string& test,
                                      const std::string& metric, const std::string& title) {
  const auto in_chart = [&](const Record& r) {
    return r.phase == phase && r.test == test && r.metric == metric && r.rank == kJobLevel && !r.node.empty();
  };
  std::vector<const Record*> records;
  std::vector<double> values;
  for (const auto& r : rep.checks)
    if (in_chart(r) && r.has_value()) {
      records.push_back(&r);
      values.push_back(r.value);
    }
  if (records.empty()) return {};
  BarChart c;
  c.title = title;
  c.details = fmt::format("{} {} {}", phase, test, metric);
  c.y_label = fmt::format("{} ({})", metric, records.front()->unit);
  // A node measured twice (a second run of the phase in the run directory) is one bar, its lower.
  records = lowest_per_node(records);
  if (records.size() > kMaxBars) {
    // As per_gpu_charts: 1,024 bars are no longer read one by one; the slowest nodes are.
    const std::size_t nodes = keep_lowest_nodes(records);
    c.title = fmt::format("{}: the {} lowest of {} nodes", title, records.size(), nodes);
  } else {
    // Nodes the grid does not know keep lowest_per_node's order by name, after the others.
    std::stable_sort(records.begin(), records.end(),
                     [&](const Record* a, const Record* b) { return node_order(rep, a->node) < node_order(rep, b->node); });
  }
  for (const Record* r : records) c.bars.push_back(bar_of(rep, *r, r->node, r->node));
  add_rule_bounds(c, rep, in_chart);
  add_median(c, values);
  return {std::move(c)};
}

}  // namespace gpuaccept::report
