#include "run/node_inventory.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace gpuaccept::report {
using nlohmann::json;

namespace {

// The documents are input from another program: every look-up tolerates a missing
// key or a value of another type, and yields "" rather than throwing.
std::string text_at(const json& doc, const char* pointer) {
  const json::json_pointer p(pointer);
  if (!doc.contains(p)) return {};
  const json& v = doc.at(p);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return {};
}

const json& array_at(const json& doc, const char* pointer) {
  static const json empty = json::array();
  const json::json_pointer p(pointer);
  return doc.contains(p) && doc.at(p).is_array() ? doc.at(p) : empty;
}

std::string gpus_summary(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::map<std::string, int> count;
  for (const auto& n : names) ++count[n];
  std::vector<std::string> parts;
  for (const auto& [name, n] : count) parts.push_back(fmt::format("{} × {}", n, name));
  return fmt::format("{}", fmt::join(parts, " + "));
}

std::string network_summary(const json& doc) {
  std::map<std::string, int> count;
  for (const auto& p : array_at(doc, "/infiniband"))
    ++count[fmt::format("{} {} {}", text_at(p, "/state"), text_at(p, "/rate"), text_at(p, "/link_layer"))];
  if (count.empty()) return "none";
  std::vector<std::string> parts;
  for (const auto& [what, n] : count) parts.push_back(fmt::format("{} × {}", n, what));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string memory_summary(const json& doc) {
  const std::string bytes = text_at(doc, "/cpu/memory_bytes");
  if (bytes.empty()) return {};
  try {
    return fmt::format("{:.0f} GiB", std::stod(bytes) / 1073741824.0);
  } catch (const std::exception&) {
    return {};
  }
}

std::optional<double> number_at(const json& doc, const char* pointer) {
  const json::json_pointer p(pointer);
  if (!doc.contains(p) || !doc.at(p).is_number()) return std::nullopt;
  return doc.at(p).get<double>();
}

// "8 × SXM 700 W": form factor and power limit in force, as NVML reported them.
std::string board_summary(const json& doc) {
  std::vector<std::string> boards;
  for (const auto& g : array_at(doc, "/gpus/node_gpus")) {
    const std::string form = text_at(g, "/form_factor");
    const auto watts = number_at(g, "/power_limit_w");
    boards.push_back(fmt::format("{} {}", form.empty() ? "?" : form, watts ? fmt::format("{:.0f} W", *watts) : "? W"));
  }
  return boards.empty() ? "" : gpus_summary(boards);
}

struct Column {
  const char* name;
  std::string (*value)(const json& doc);
};

const Column kColumns[] = {
    {"driver", [](const json& d) { return text_at(d, "/gpus/driver_version"); }},
    {"CUDA driver", [](const json& d) { return text_at(d, "/gpus/cuda_driver_version"); }},
    {"CUDA runtime", [](const json& d) { return text_at(d, "/gpus/cuda_runtime_version"); }},
    {"NCCL", [](const json& d) { return text_at(d, "/versions/nccl"); }},
    {"PMIx", [](const json& d) { return text_at(d, "/versions/pmix"); }},
    {"Slurm", [](const json& d) { return text_at(d, "/versions/slurm"); }},
    {"kernel", [](const json& d) { return text_at(d, "/kernel"); }},
    {"CPU", [](const json& d) { return text_at(d, "/cpu/model"); }},
    {"GPU board", board_summary},
    {"memory", memory_summary},
    {"network", network_summary},
};

}  // namespace

std::string InventoryTable::majority(const std::string& column) const {
  std::map<std::string, int> count;
  for (const auto& n : nodes)
    if (const auto it = n.fields.find(column); it != n.fields.end()) ++count[it->second];
  const auto most = std::max_element(count.begin(), count.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  const bool tied = std::count_if(count.begin(), count.end(), [&](const auto& c) { return c.second == most->second; }) > 1;
  return tied ? std::string() : most->first;
}

bool InventoryTable::differs(const NodeInventory& node, const std::string& column) const {
  const auto it = node.fields.find(column);
  if (it == node.fields.end()) return false;
  const bool all_same = std::all_of(nodes.begin(), nodes.end(), [&](const NodeInventory& n) {
    const auto other = n.fields.find(column);
    return other != n.fields.end() && other->second == it->second;
  });
  return !all_same && it->second != majority(column);
}

std::vector<std::string> InventoryTable::gpu_names() const {
  std::vector<std::string> out;
  for (const auto& n : nodes) out.insert(out.end(), n.gpu_names.begin(), n.gpu_names.end());
  return out;
}

InventoryTable inventory_table(const std::vector<std::string>& inventory_documents) {
  InventoryTable t;
  t.columns.push_back("GPUs");
  for (const auto& c : kColumns) t.columns.push_back(c.name);
  for (const auto& text : inventory_documents) {
    const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) {
      t.problems.push_back(fmt::format("an inventory document is not a JSON object: '{}'", text.substr(0, 80)));
      continue;
    }
    const std::string host = text_at(doc, "/host");
    auto it = std::find_if(t.nodes.begin(), t.nodes.end(), [&](const auto& n) { return n.host == host; });
    if (it != t.nodes.end()) {  // every rank of a node describes the same node; the first one speaks for it
      ++it->ranks;
      continue;
    }
    NodeInventory node;
    node.host = host;
    node.ranks = 1;
    for (const auto& g : array_at(doc, "/gpus/node_gpus")) {
      node.gpu_names.push_back(text_at(g, "/name"));
      // Records name a GPU by its index on the node (older inventories: NVML's).
      const auto index = number_at(g, "/node_index").value_or(number_at(g, "/nvml_index").value_or(-1));
      if (index >= 0)
        t.gpus.add(host, static_cast<int>(index), {text_at(g, "/name"), text_at(g, "/form_factor"), number_at(g, "/power_limit_w")});
    }
    node.fields["GPUs"] = gpus_summary(node.gpu_names);
    for (const auto& c : kColumns) node.fields[c.name] = c.value(doc);
    t.nodes.push_back(std::move(node));
  }
  return t;
}

}  // namespace gpuaccept::report
