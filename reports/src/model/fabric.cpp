#include "model/fabric.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/report.h"
#include "model/slowest_pair.h"
#include "thresholds/record_label.h"

namespace gpuaccept::report {
using nlohmann::json;

namespace {

constexpr double kBandwidthFromBytes = 268435456;  // 256 MiB: as the line-rate rules (generic.yaml)

// The inventory is input from another program: every look-up tolerates a missing key or a
// value of another type.
std::string text_of(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number() || it->is_boolean()) return it->dump();
  return {};
}

std::optional<bool> bool_of(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

FabricPort port_of(const json& p) {
  FabricPort out;
  out.device = text_of(p, "device");
  out.port = text_of(p, "port");
  out.state = text_of(p, "state");
  out.phys_state = text_of(p, "phys_state");
  out.rate = text_of(p, "rate");
  out.link_layer = text_of(p, "link_layer");
  if (const auto it = p.find("rate_gbps"); it != p.end() && it->is_number()) out.rate_gbps = it->get<double>();
  out.pci_bus_id = text_of(p, "pci_bus_id");
  out.numa_node = text_of(p, "numa_node");
  if (const auto it = p.find("netdevs"); it != p.end() && it->is_array())
    for (const auto& n : *it)
      if (n.is_string()) out.netdevs.push_back(n.get<std::string>());
  if (const auto it = p.find("nearest_gpus"); it != p.end() && it->is_array())
    for (const auto& g : *it)
      if (g.is_number_integer()) out.nearest_gpus.push_back(g.get<int>());
  out.gpu_distance = text_of(p, "gpu_distance");
  out.active = bool_of(p, "active");
  return out;
}

std::string gpudirect_of(const json& doc) {
  const auto it = doc.find("gpudirect");
  if (it == doc.end() || !it->is_object()) return {};
  const auto possible = bool_of(*it, "possible");
  if (!possible) return {};
  const std::string detail = text_of(*it, "detail");
  return std::string(*possible ? "possible" : "not possible") + (detail.empty() ? "" : ": " + detail);
}

std::string param(const Record& r, const char* key) {
  const auto it = r.params.find(key);
  return it == r.params.end() ? std::string() : it->second;
}

double number_param(const Record& r, const char* key) {
  const std::string s = param(r, key);
  double v = -1;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return s.empty() || ec != std::errc() || end != s.data() + s.size() ? -1 : v;
}

bool across_nodes(const Record& r) {
  const std::string scale = param(r, "scale");
  return r.phase == "nccl-scaling" && (scale == "inter_node" || scale == "all");
}

// The verdicts about each record across nodes, by record_identity().
using VerdictIndex = std::map<std::string, std::vector<const RuleVerdict*>>;

VerdictIndex index_verdicts(const std::vector<RuleVerdict>& verdicts) {
  VerdictIndex out;
  for (const auto& v : verdicts)
    if (v.record && across_nodes(*v.record)) out[record_identity(*v.record)].push_back(&v);
  return out;
}

FabricMeasurement measurement(const Record& r, const VerdictIndex& index) {
  FabricMeasurement m{r, std::nullopt, level_of(r.status)};
  const auto it = index.find(record_identity(r));
  if (it == index.end()) return m;
  const RuleVerdict* chosen = nullptr;
  for (const RuleVerdict* v : it->second) {
    m.level = worst(m.level, level_of(v->outcome));
    // The verdict shown: the worst, and among equals the one against the fabric's own bound.
    const bool fabric_bound = v->check == RuleCheck::LineRate || v->check == RuleCheck::Max;
    if (!chosen || static_cast<int>(v->outcome) > static_cast<int>(chosen->outcome) ||
        (v->outcome == chosen->outcome && fabric_bound && chosen->check != RuleCheck::LineRate))
      chosen = v;
  }
  if (chosen) m.verdict = *chosen;
  return m;
}

std::vector<FabricMeasurement> bandwidth_rows(const std::vector<Record>& checks, const VerdictIndex& index) {
  std::vector<FabricMeasurement> out;
  for (const char* test : {"all_reduce", "all_gather", "reduce_scatter"})
    for (const char* scale : {"inter_node", "all"}) {
      const Record* best = nullptr;  // the largest size, then the lowest busbw
      double best_bytes = -1;
      for (const auto& r : checks) {
        if (r.test != test || r.metric != "busbw" || !across_nodes(r) || param(r, "scale") != scale || !r.has_value())
          continue;
        const double bytes = number_param(r, "bytes");
        if (bytes < kBandwidthFromBytes) continue;
        if (bytes > best_bytes || (bytes == best_bytes && r.value < best->value)) {
          best = &r;
          best_bytes = bytes;
        }
      }
      if (best) out.push_back(measurement(*best, index));
    }
  return out;
}

std::vector<FabricMeasurement> latency_rows(const std::vector<Record>& checks, const VerdictIndex& index) {
  std::vector<FabricMeasurement> out;
  for (const auto& r : checks)
    if (r.test == "all_reduce" && r.metric == "time" && across_nodes(r) && param(r, "bytes") == "8")
      out.push_back(measurement(r, index));
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return param(a.record, "scale") > param(b.record, "scale");  // inter_node before all
  });
  return out;
}

// The fabric's nodes in order of first mention, found by name in constant time (1,024 nodes
// with a few fabric records each).
class NodeList {
 public:
  explicit NodeList(std::vector<FabricNode>& nodes) : nodes_(nodes) {}

  FabricNode& operator[](const std::string& host) {
    const auto [it, added] = index_.emplace(host, nodes_.size());
    if (added) {
      nodes_.push_back({});
      nodes_.back().host = host;
    }
    return nodes_[it->second];
  }

 private:
  std::vector<FabricNode>& nodes_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace

bool fabric_record_names_node(const Record& r) {
  static const char* const kTests[] = {"fabric_ports", "fabric_rate", "gpudirect", "hca_loopback", kPortCountersTest};
  if (r.node.empty() || caused_by_peer(r)) return false;
  return std::any_of(std::begin(kTests), std::end(kTests), [&](const char* t) { return r.test == t; });
}

std::vector<std::pair<std::string, std::string>> fabric_concerns(const Fabric& f) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& c : f.counters.changes)
    if (c.level == Level::Warn) out.emplace_back(c.node, fmt::format("WARN {} {} {}: {}", kPortCountersTest, c.counter, c.port, c.message));
  return out;
}

bool Fabric::empty() const {
  const bool any_port = std::any_of(nodes.begin(), nodes.end(), [](const auto& n) { return !n.ports.empty(); });
  const bool any_check = std::any_of(nodes.begin(), nodes.end(), [](const auto& n) { return !n.checks.empty(); });
  return !any_port && !any_check && counters.documents == 0 && transports.empty() && bandwidth.empty() &&
         latency.empty() && node_pairs.empty();
}

Fabric build_fabric(const LoadedRun& run, const std::vector<std::string>& nodes, const std::vector<Record>& checks,
                    const std::vector<RuleVerdict>& verdicts, PortCounterJudgement counters) {
  Fabric f;
  NodeList node_named(f.nodes);
  for (const auto& host : nodes) node_named[host];
  // Every rank of a node describes the same ports; the first document of a node speaks for it.
  // Read in place: at 8,192 ranks a copy of the inventories is tens of MB.
  std::set<std::string> described;
  for (const auto& src : run.sources) {
    if (src.phase != "discover") continue;
    const auto docs = src.documents.find("inventory");
    if (docs == src.documents.end()) continue;
    for (const auto& text : docs->second) {
      const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!doc.is_object()) continue;  // node_inventory.cpp names it among the inventory's problems
      const std::string host = text_of(doc, "host");
      if (!described.insert(host).second) continue;
      FabricNode& n = node_named[host];
      if (const auto it = doc.find("infiniband"); it != doc.end() && it->is_array())
        for (const auto& p : *it)
          if (p.is_object()) n.ports.push_back(port_of(p));
      n.gpudirect = gpudirect_of(doc);
    }
  }
  for (const auto& r : checks) {
    if (fabric_record_names_node(r) && r.test != kPortCountersTest) node_named[r.node].checks.push_back(r);
    if (r.phase == "nccl-scaling" && r.test == "nccl_transport") f.transports.push_back(r);
    if (r.phase == "nccl-scaling" && r.test == "pair_busbw" && param(r, "scale") == "node_pair") f.node_pairs.push_back(r);
  }
  for (const auto& c : counters.changes) node_named[c.node].counters.push_back(c);
  for (auto& n : f.nodes) {
    for (const auto& r : n.checks) n.level = worst(n.level, level_of(r.status));
    for (const auto& c : n.counters) n.level = worst(n.level, c.level);
  }
  f.counters = std::move(counters);
  const VerdictIndex index = index_verdicts(verdicts);
  f.bandwidth = bandwidth_rows(checks, index);
  f.latency = latency_rows(checks, index);
  f.slowest_pair = slowest_node_pair(checks);
  return f;
}

}  // namespace gpuaccept::report
