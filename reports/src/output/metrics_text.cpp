#include "output/metrics_text.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace gpuaccept::report {

namespace {

struct MetricName {
  const char* name;
  const char* help;
};

// Headline figure (model/headline.h) -> metric; units as name suffixes, as Prometheus asks.
const std::map<std::string, MetricName>& metric_names() {
  static const std::map<std::string, MetricName> m = {
      {"nccl_busbw", {"gpuaccept_nccl_busbw_gbytes_per_second", "NCCL bus bandwidth at the largest message (lowest record)"}},
      {"gemm_tflops", {"gpuaccept_gemm_tflop_per_second", "GEMM throughput at smoke's largest size over the GPUs"}},
      {"memory_bandwidth", {"gpuaccept_memory_bandwidth_gbytes_per_second", "device-to-device copy bandwidth over the GPUs"}},
      {"ddp_tokens_per_s_per_gpu", {"gpuaccept_ddp_tokens_per_second_per_gpu", "ddp training throughput per GPU, all GPUs"}},
      {"fsdp_lora_tokens_per_s_per_gpu",
       {"gpuaccept_fsdp_lora_tokens_per_second_per_gpu", "fsdp-lora training throughput per GPU, all GPUs"}},
  };
  return m;
}

std::string escape_label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string labels(const std::vector<std::pair<std::string, std::string>>& l) {
  if (l.empty()) return "";
  std::string s = "{";
  for (std::size_t i = 0; i < l.size(); ++i)
    s += fmt::format("{}{}=\"{}\"", i ? "," : "", l[i].first, escape_label(l[i].second));
  return s + "}";
}

void family(std::string& out, const std::string& name, const std::string& help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
}

}  // namespace

std::string metrics_text(const Report& r, std::string_view run_id, double unix_time) {
  std::string out;
  family(out, "gpuaccept_run_info", "the run these figures are from (value 1)");
  out += fmt::format("gpuaccept_run_info{} 1\n", labels({{"run", std::string(run_id)},
                                                          {"verdict", std::string(verdict_word(r))},
                                                          {"tool_version", r.tool_version}}));
  family(out, "gpuaccept_run_passed", "1 when the run's verdict is PASS, else 0");
  out += fmt::format("gpuaccept_run_passed {}\n", verdict_word(r) == "PASS" ? 1 : 0);
  family(out, "gpuaccept_run_timestamp_seconds", "when the report was made (Unix time)");
  out += fmt::format("gpuaccept_run_timestamp_seconds {:.3f}\n", unix_time);
  family(out, "gpuaccept_checks", "the run's checks by status");
  for (Level l : {Level::Pass, Level::Skip, Level::Warn, Level::Fail, Level::Error})
    out += fmt::format("gpuaccept_checks{} {}\n", labels({{"status", std::string(to_string(l))}}),
                       r.check_counts.count(l));

  // Per node: one state each (drain, watch or ok), as a state set.
  std::set<std::string> drain, watch;
  for (const auto& a : r.node_actions.drain) drain.insert(a.node);
  for (const auto& a : r.node_actions.watch) watch.insert(a.node);
  std::vector<std::string> nodes = r.grid.nodes;
  for (const auto& n : drain)
    if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
  family(out, "gpuaccept_node_state", "each node's state after the run: drain, watch or ok (value 1)");
  for (const auto& n : nodes)
    out += fmt::format("gpuaccept_node_state{} 1\n",
                       labels({{"node", n}, {"state", drain.count(n) ? "drain" : watch.count(n) ? "watch" : "ok"}}));

  // Headline figures, one family per name in a fixed order.
  for (const auto& [headline, metric] : metric_names()) {
    bool first = true;
    for (const auto& f : r.headlines) {
      if (f.name != headline) continue;
      if (first) family(out, metric.name, metric.help);
      first = false;
      out += fmt::format("{}{} {}\n", metric.name, labels(f.labels), f.value);
    }
  }
  return out + "# EOF\n";
}

}  // namespace gpuaccept::report
