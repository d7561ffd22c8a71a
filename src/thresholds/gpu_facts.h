// What an absolute floor assumes of the GPU it judges, and what NVML said of each GPU.
// A model's threshold file measures its floors on one SKU, form factor and power limit (an
// H100 SXM at 700 W); a PCIe card of the same chip, or the same GPU capped to 500 W, is
// healthy well below them. So every floor of such a file (a rule's `min`) carries the file's
// `gpu:` assumption, and applies only to records whose GPUs NVML reported as meeting it
// (discover's inventory); elsewhere the verdict says the floor did not apply and why, and the
// fleet rules judge alone.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "results/record.h"

namespace gpuaccept {

// Case-insensitive, ignoring surrounding blanks: "nvidia h200" is "NVIDIA H200", but
// "NVIDIA H200 NVL" (a different board with other limits) is not.
bool same_gpu_model(std::string_view a, std::string_view b);

// One GPU as NVML reported it (discover's inventory, hw/gpu_inventory.h).
struct GpuFacts {
  std::string name;                      // "NVIDIA H100 80GB HBM3"
  std::string form_factor;               // "SXM", "PCIe", "NVL"; "" when NVML could not tell
  std::optional<double> power_limit_w;   // the limit in force
};

// A threshold file's `gpu:`: the SKU (its `models` and the words of `sku`), form factor and
// power limit its floors were measured on.
struct GpuAssumption {
  std::string sku;                      // "NVIDIA H100 SXM5 80GB": words, for messages
  std::vector<std::string> models;      // the NVML names the file is for
  std::string form_factor;              // "SXM"
  double power_limit_w = 0;             // the limit in force must be at least this

  // "NVIDIA H100 SXM5 80GB (SXM, power limit >= 700 W)"
  std::string describe() const;
  // Why `gpu` is not the GPU this assumes ("" when it is): another model, a form factor or
  // power limit NVML did not report, or one that differs.
  std::string unmet_by(const GpuFacts& gpu) const;
};

// The run's GPUs by node and index (the index records carry: hw/node_gpu_index.h).
class GpuFactsIndex {
 public:
  void add(const std::string& node, int gpu_index, GpuFacts facts);
  // The GPUs a record is about: its own (a GPU's record), every GPU of its node (a node's),
  // every GPU of the run (the job's). Empty when the inventory has none of them.
  std::vector<const GpuFacts*> of(const Record& r) const;
  bool empty() const { return by_node_.empty(); }

 private:
  std::map<std::string, std::map<int, GpuFacts>> by_node_;
};

}  // namespace gpuaccept
