// The node x GPU overview: for every node and GPU index, the worst level among the
// records about it and the rule verdicts on them, and whether a fleet rule singled it
// out as an outlier. Column -1 holds what is about the node as a whole.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/level.h"
#include "results/record.h"
#include "thresholds/rule_verdict.h"

namespace gpuaccept::report {

struct GridCell {
  LevelTally tally;                // every record and rule verdict about it
  bool outlier = false;            // a fleet rule flagged it
  std::vector<std::string> notes;  // what is not PASS here, one line each
  Level level() const { return tally.summary(); }
};

inline constexpr int kNodeColumn = -1;

struct NodeGrid {
  std::vector<std::string> nodes;  // rows
  int gpus = 0;                    // columns 0..gpus-1, plus kNodeColumn
  std::map<std::pair<std::string, int>, GridCell> cells;
  // One sentence per (node, GPU index) that records give to more than one GPU (distinct UUIDs):
  // that column mixes those GPUs. Files written before GPUs were numbered on their node
  // (hw/node_gpu_index.h) name every GPU that Slurm bound to one rank "GPU 0".
  std::vector<std::string> ambiguous;
  std::unordered_map<std::string, int> row_of;  // node -> its index in `nodes` (1,024 nodes: no linear search per record)

  const GridCell* cell(const std::string& node, int gpu) const;
  // The node's row; nodes.size() for a node not in the grid (it sorts last).
  int row(const std::string& node) const;
};

// `known_nodes`: hosts from the inventory, in order; nodes seen only in records follow.
NodeGrid build_node_grid(const std::vector<std::string>& known_nodes, const std::vector<Record>& records,
                         const std::vector<RuleVerdict>& verdicts);

}  // namespace gpuaccept::report
