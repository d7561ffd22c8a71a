#include "discover/node_checks.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpuaccept::discover {
using nlohmann::json;

namespace {

// Inventories grouped by host, in the order hosts first appear.
std::vector<std::pair<std::string, std::vector<const json*>>> by_node(const std::vector<json>& inventories) {
  std::vector<std::pair<std::string, std::vector<const json*>>> out;
  for (const auto& inv : inventories) {
    const std::string host = inv.value("host", "?");
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == host; });
    if (it == out.end()) it = out.insert(out.end(), {host, {}});
    it->second.push_back(&inv);
  }
  return out;
}

}  // namespace

std::vector<Record> check_gpus_per_node(const std::vector<json>& inventories, std::optional<int> expected_from_config) {
  std::vector<Record> out;
  for (const auto& [host, ranks] : by_node(inventories)) {
    const json& gpus = ranks.front()->at("gpus");
    const int present = static_cast<int>(gpus.at("node_gpus").size());
    std::set<std::string> visible;  // union of what the node's ranks can use
    int gres = -1;
    for (const json* inv : ranks) {
      for (const auto& g : inv->at("gpus").at("visible")) visible.insert(g.value("uuid", g.value("pci_bus_id", "")));
      gres = std::max(gres, inv->at("slurm").value("gres_gpus_on_node", -1));
    }
    Record r = node_record(host, "gpus_per_node");  // about this node: a FAIL drains it
    r.metric = "gpus";
    r.unit = "count";
    const std::string reason = gpus.value("reason", "");
    if (expected_from_config) {
      r.value = present;
      r.params = {{"expected", std::to_string(*expected_from_config)}, {"source", "config"}};
      r.status = present == *expected_from_config ? Status::Pass : Status::Fail;
      r.message = fmt::format("{} GPUs present, {} expected (discover.expected_gpus_per_node){}", present,
                              *expected_from_config, reason.empty() || present ? "" : ": " + reason);
    } else if (gres > 0) {
      r.value = static_cast<double>(visible.size());
      r.params = {{"expected", std::to_string(gres)}, {"source", "slurm gres"}};
      r.status = static_cast<int>(visible.size()) == gres ? Status::Pass : Status::Fail;
      r.message = fmt::format("{} GPUs visible to the job's ranks, Slurm allocated {}{}", visible.size(), gres,
                              reason.empty() ? "" : ": " + reason);
    } else {
      r.value = present;
      r.status = Status::Skip;
      r.message = present == 0
                      ? fmt::format("no GPU on this node and none expected: {}", reason.empty() ? "no NVML devices" : reason)
                      : fmt::format("{} GPUs present; nothing to compare with (set discover.expected_gpus_per_node "
                                    "or request GPUs with --gpus-per-node)",
                                    present);
    }
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

struct Attribute {
  const char* name;
  bool needs_gpu;
  std::string (*value)(const json& inv);  // "" when unknown on that node
};

std::string gpu_models(const json& inv) {
  std::set<std::string> names;
  for (const auto& g : inv.at("gpus").at("node_gpus")) names.insert(g.value("name", ""));
  return fmt::format("{}", fmt::join(names, " + "));
}

const Attribute kAttributes[] = {
    {"gpu_model", true, gpu_models},
    {"driver_version", true, [](const json& i) { return i.at("gpus").value("driver_version", ""); }},
    {"cuda_driver_version", true, [](const json& i) { return i.at("gpus").value("cuda_driver_version", ""); }},
    {"cuda_runtime_version", false, [](const json& i) { return i.at("gpus").value("cuda_runtime_version", ""); }},
    {"nccl_version", false, [](const json& i) { return i.at("versions").value("nccl", ""); }},
};

}  // namespace

std::vector<Record> check_nodes_alike(const std::vector<json>& inventories) {
  std::vector<Record> out;
  const auto nodes = by_node(inventories);
  for (const auto& attr : kAttributes) {
    Record r = job_record("nodes_alike");  // about the job: the odd node is named in words only
    r.params = {{"attribute", attr.name}};
    std::map<std::string, std::vector<std::string>> hosts_by_value;
    for (const auto& [host, ranks] : nodes) hosts_by_value[attr.value(*ranks.front())].push_back(host);
    const bool no_gpu_anywhere = hosts_by_value.size() == 1 && hosts_by_value.begin()->first.empty();
    if (attr.needs_gpu && no_gpu_anywhere) {
      r.status = Status::Skip;
      r.message = fmt::format("{}: no GPU found on any node", attr.name);
    } else if (nodes.size() < 2) {
      r.status = Status::Skip;
      r.message = fmt::format("{} = '{}'; one node only, nothing to compare", attr.name, hosts_by_value.begin()->first);
    } else if (hosts_by_value.size() == 1) {
      r.status = Status::Pass;
      r.message = fmt::format("{} = '{}' on all {} nodes", attr.name, hosts_by_value.begin()->first, nodes.size());
    } else {
      // The value most nodes have is taken as the norm; every other node is named.
      const auto norm = std::max_element(hosts_by_value.begin(), hosts_by_value.end(),
                                         [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
      std::vector<std::string> odd;
      for (const auto& [value, hosts] : hosts_by_value)
        if (value != norm->first)
          odd.push_back(fmt::format("{} has '{}'", fmt::join(hosts, ","), value.empty() ? "(none)" : value));
      r.status = Status::Fail;
      r.message = fmt::format("{} differs: {}; {} nodes have '{}'", attr.name, fmt::join(odd, "; "),
                              norm->second.size(), norm->first);
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<Record> rank_records(const json& inventory) {
  std::vector<Record> out;
  const json& gpus = inventory.at("gpus");
  Record count;
  count.test = "visible_gpus";
  count.metric = "gpus";
  count.unit = "count";
  count.value = static_cast<double>(gpus.at("visible").size());
  count.params = {{"cuda_visible_devices", inventory.at("slurm").value("cuda_visible_devices", "")}};
  count.message = gpus.value("reason", "");
  out.push_back(count);
  for (const auto& g : gpus.at("visible")) {
    Record r;
    r.test = "gpu";
    r.gpu_index = g.value("node_index", g.value("cuda_index", -1));  // older inventories lack node_index
    r.gpu_uuid = g.value("uuid", "");
    r.metric = "memory";
    r.unit = "GiB";
    r.value = g.value("memory_bytes", 0ULL) / 1073741824.0;
    r.params = {{"name", g.value("name", "")}, {"pci_bus_id", g.value("pci_bus_id", "")},
                {"compute_capability", g.value("compute_capability", "")}};
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gpuaccept::discover
