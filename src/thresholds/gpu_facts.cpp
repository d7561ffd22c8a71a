#include "thresholds/gpu_facts.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace gpuaccept {

namespace {

std::string normalized_model(std::string_view name) {
  const auto first = name.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  name = name.substr(first, name.find_last_not_of(" \t") - first + 1);
  std::string out(name);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

bool same_gpu_model(std::string_view a, std::string_view b) { return normalized_model(a) == normalized_model(b); }

std::string GpuAssumption::describe() const {
  return fmt::format("{} ({}, power limit >= {} W)", sku, form_factor, power_limit_w);
}

std::string GpuAssumption::unmet_by(const GpuFacts& gpu) const {
  if (!models.empty() &&
      std::none_of(models.begin(), models.end(), [&](const std::string& m) { return same_gpu_model(m, gpu.name); }))
    return fmt::format("the GPU is a '{}', not {}", gpu.name, sku);
  if (!form_factor.empty()) {
    if (gpu.form_factor.empty()) return fmt::format("NVML did not report the GPU's form factor ({} assumed)", form_factor);
    if (gpu.form_factor != form_factor)
      return fmt::format("the GPU is a {} board, the floor assumes {}", gpu.form_factor, form_factor);
  }
  if (power_limit_w > 0) {
    if (!gpu.power_limit_w) return fmt::format("NVML did not report the GPU's power limit ({} W assumed)", power_limit_w);
    if (*gpu.power_limit_w < power_limit_w)
      return fmt::format("the GPU's power limit is {:.0f} W, the floor assumes {} W", *gpu.power_limit_w, power_limit_w);
  }
  return {};
}

void GpuFactsIndex::add(const std::string& node, int gpu_index, GpuFacts facts) {
  by_node_[node][gpu_index] = std::move(facts);
}

std::vector<const GpuFacts*> GpuFactsIndex::of(const Record& r) const {
  std::vector<const GpuFacts*> out;
  const auto add_node = [&](const std::map<int, GpuFacts>& gpus) {
    for (const auto& [index, facts] : gpus) out.push_back(&facts);
  };
  if (r.node.empty()) {
    for (const auto& [node, gpus] : by_node_) add_node(gpus);
    return out;
  }
  const auto node = by_node_.find(r.node);
  if (node == by_node_.end()) return out;
  if (r.gpu_index < 0) {
    add_node(node->second);
  } else if (const auto gpu = node->second.find(r.gpu_index); gpu != node->second.end()) {
    out.push_back(&gpu->second);
  }
  return out;
}

}  // namespace gpuaccept
