#include "output/fabric_json.h"

#include <cmath>

namespace gpuaccept::report {
using nlohmann::json;

namespace {

json number_or_null(double v) { return std::isnan(v) ? json(nullptr) : json(v); }

json port_json(const FabricPort& p) {
  return {{"port", p.name()},          {"device", p.device},         {"port_number", p.port},
          {"state", p.state},          {"phys_state", p.phys_state}, {"rate", p.rate},
          {"rate_gbps", number_or_null(p.rate_gbps)}, {"link_layer", p.link_layer},
          {"pci_bus_id", p.pci_bus_id}, {"numa_node", p.numa_node},  {"netdevs", p.netdevs},
          {"nearest_gpus", p.nearest_gpus}, {"gpu_distance", p.gpu_distance},
          {"active", p.active ? json(*p.active) : json(nullptr)}};
}

json check_json(const Record& r) {
  return {{"phase", r.phase},   {"test", r.test},     {"node", r.node},       {"metric", r.metric},
          {"value", number_or_null(r.value)}, {"unit", r.unit}, {"params", r.params},
          {"status", to_string(r.status)}, {"message", r.message}};
}

json change_json(const CounterChange& c) {
  return {{"node", c.node},         {"port", c.port},           {"counter", c.counter},
          {"from", c.from},         {"to", c.to},               {"rise", c.rise},
          {"reset", c.reset},       {"saturated", c.saturated}, {"read_from", c.read_from},
          {"read_to", c.read_to},   {"first_rise", c.first_rise}, {"phase", c.phase},
          {"level", to_string(c.level)}, {"message", c.message}};
}

json measurement_json(const FabricMeasurement& m) {
  json j = check_json(m.record);
  j["level"] = to_string(m.level);
  j["bytes"] = m.record.params.count("bytes") ? m.record.params.at("bytes") : "";
  j["scale"] = m.record.params.count("scale") ? m.record.params.at("scale") : "";
  if (const auto it = m.record.params.find("line_rate_gbps"); it != m.record.params.end()) j["line_rate_gbps"] = it->second;
  if (m.verdict) {
    j["rule"] = m.verdict->rule.name;
    j["check"] = to_string(m.verdict->check);
    j["outcome"] = to_string(m.verdict->outcome);
    j["bound"] = number_or_null(m.verdict->bound);
    j["expected_gbytes_per_s"] =
        std::isnan(m.verdict->line_rate_gbps) ? json(nullptr) : json(m.verdict->line_rate_gbps / 8);
    j["rule_message"] = m.verdict->message;
  } else {
    j["rule"] = nullptr;
  }
  return j;
}

}  // namespace

json fabric_json(const Fabric& f) {
  json nodes = json::array();
  for (const auto& n : f.nodes) {
    json ports = json::array(), checks = json::array(), counters = json::array();
    for (const auto& p : n.ports) ports.push_back(port_json(p));
    for (const auto& r : n.checks) checks.push_back(check_json(r));
    for (const auto& c : n.counters) counters.push_back(change_json(c));
    nodes.push_back({{"node", n.host}, {"status", to_string(n.level)}, {"ports", ports}, {"gpudirect", n.gpudirect},
                     {"checks", checks}, {"counters", counters}});
  }
  json changes = json::array();
  for (const auto& c : f.counters.changes) changes.push_back(change_json(c));
  json transports = json::array(), bandwidth = json::array(), latency = json::array(), pairs = json::array();
  for (const auto& r : f.transports) transports.push_back(check_json(r));
  for (const auto& m : f.bandwidth) bandwidth.push_back(measurement_json(m));
  for (const auto& m : f.latency) latency.push_back(measurement_json(m));
  for (const auto& r : f.node_pairs) pairs.push_back(check_json(r));
  return {{"nodes", nodes},
          {"counters",
           {{"status", to_string(f.counters.level())},
            {"reason", f.counters.skipped},
            {"documents", f.counters.documents},
            {"nodes", f.counters.nodes},
            {"ports", f.counters.ports},
            {"changes", changes},
            {"problems", f.counters.problems}}},
          {"transports", transports},
          {"inter_node_busbw", bandwidth},
          {"latency", latency},
          {"node_pairs", pairs},
          {"slowest_node_pair", f.slowest_pair ? check_json(*f.slowest_pair) : json(nullptr)}};
}

}  // namespace gpuaccept::report
