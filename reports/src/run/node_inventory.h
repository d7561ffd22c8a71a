// Discover's per-rank inventory documents condensed to one row per node: GPUs,
// driver, CUDA, NCCL and the rest, with the value most nodes share per column, so the
// report can highlight the node that differs. Also the GPU model names the thresholds
// are chosen by, and each GPU's form factor and power limit the floors assume.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "thresholds/gpu_facts.h"

namespace gpuaccept::report {

struct NodeInventory {
  std::string host;
  int ranks = 0;                       // inventory documents from this node
  std::vector<std::string> gpu_names;  // every GPU on the node, by NVML index
  std::map<std::string, std::string> fields;  // column -> value ("" when unknown)
};

struct InventoryTable {
  std::vector<std::string> columns;
  std::vector<NodeInventory> nodes;  // in the order hosts first appear
  std::vector<std::string> problems;  // documents that could not be read, and why
  GpuFactsIndex gpus;  // every GPU by node and index, as NVML reported it: what the floors assume

  // The value most nodes have in a column (the norm the others are compared with);
  // "" when no value is more common than every other.
  std::string majority(const std::string& column) const;
  // Whether the node's value is not the norm of a column whose nodes disagree; with no
  // norm (a tie, as between two nodes) every node of the column differs.
  bool differs(const NodeInventory& node, const std::string& column) const;
  // One entry per GPU found on any node, e.g. 8 x "NVIDIA H200".
  std::vector<std::string> gpu_names() const;
};

InventoryTable inventory_table(const std::vector<std::string>& inventory_documents);

}  // namespace gpuaccept::report
