// The slowest node pair of a run: the lowest busbw among nccl-scaling's pairwise all_reduce
// of two whole nodes (pair_busbw records with scale node_pair; params a and b are the hosts).
// A collective across nodes that fails its rule is slowed by its slowest link, so the report
// names that pair in the failure (docs/fabric.md).
#pragma once

#include <optional>
#include <vector>

#include "results/record.h"
#include "thresholds/rule_verdict.h"

namespace gpuaccept::report {

// The node_pair record with the lowest busbw that was measured (a value, not SKIP or ERROR).
std::optional<Record> slowest_node_pair(const std::vector<Record>& records);

// "slowest node pair: gpa-node1 - gpa-node2 12.3 GB/s (all_reduce 256 MiB)".
std::string slowest_pair_text(const Record& pair);

// Whether a verdict is a FAIL about nccl-scaling traffic between nodes (scale inter_node or
// all): the verdicts whose messages name the slowest pair.
bool fails_between_nodes(const RuleVerdict& v);

// Appends slowest_pair_text to the message of every verdict fails_between_nodes picks,
// when the run has a node pair measured.
void name_slowest_pair(std::vector<RuleVerdict>& verdicts, const std::vector<Record>& records);

}  // namespace gpuaccept::report
