// Which nodes each phase of a run ran on, and the nodes some phase did not run on.
//
// A pipeline is meant to test one node set: every phase on the nodes the first phase was given
// (sbatch/pipeline.sbatch pins the array's later indices). Where the phases' files name different
// nodes (a run from before the pinning, phases started by hand, a pipeline whose later index was
// moved by someone), no node was tested by the whole pipeline: per-node verdicts, "nodes alike"
// and the drain list each speak of a different set. The report says so (an incomplete reason)
// and names, per node, the phases that did not run there.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "run/loaded_run.h"

namespace gpuaccept::report {

struct PhaseNodes {
  std::string phase;
  std::vector<std::string> nodes;  // sorted; from the files' `hosts`, else their `slurm_nodelist`
};

struct NodeCoverage {
  std::vector<PhaseNodes> phases;  // the phases whose files name their nodes, in the order given
  // Node -> the phases (of `phases`) that did not run there; only nodes that missed one.
  std::map<std::string, std::vector<std::string>> missed;

  bool same_nodes() const { return missed.empty(); }
};

// `sources` in pipeline order (Report::phases' sources, flattened). A phase with several files
// (a second run, a partial phase's rank checkpoints) ran on the union of their nodes; a file that
// names none (unreadable, missing) adds none.
NodeCoverage node_coverage(const std::vector<PhaseSource>& sources);

// "gpa-node1 did not run smoke, ddp; gpa-node2 did not run discover", at most `max_nodes` nodes
// named, then "and N more nodes".
std::string missed_phases_text(const NodeCoverage& c, std::size_t max_nodes);

}  // namespace gpuaccept::report
