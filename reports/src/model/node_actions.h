// Which nodes an operator should take out of service after a run, and which to watch.
// The report writes them as Slurm hostlists (bad-nodes.txt, watch-nodes.txt) and as
// drain.sh (output/drain_script.h), so nobody retypes node names from a table.
//
// A record is about the node it names, whichever rank wrote it (results/record.h,
// blames_node): a rank's own record, or one rank 0 wrote about a node (rank -1 with a node:
// GPUs per node, a node's binding, a collective within it, the fabric's checks of a node's
// ports). A node is to DRAIN when
// something about it failed on its own terms: one of its records FAILed or ERRORed, or a rule
// with an absolute bound (min, max) FAILed one of its records. A node is to WATCH when the
// only evidence is relative: a fleet rule found it well off the median of its peers (it may
// be the slowest of healthy nodes), or a rule WARNed. Records that name no node (about the
// whole job: "every node alike", a collective across nodes, the loss curve of all GPUs; or
// about a file) and failures a peer caused (cause=peer) are blamed on no node: they are
// counted as not attributable, and the failing phase's table says what they are.
#pragma once

#include <string>
#include <vector>


namespace gpuaccept::report {

struct NodeAction {
  std::string node;
  std::string first_problem;  // "FAIL gemm bf16 8192^3: 612.0 TFLOP/s < 646": what drain's reason quotes
  int problems = 0;           // how many records and verdicts about this node are not PASS
};

struct NodeActions {
  std::vector<NodeAction> drain;  // in the report's node order
  std::vector<NodeAction> watch;  // not in `drain`
  int unattributed_failures = 0;  // FAILs/ERRORs about the whole job or a file
};

struct Report;

// From the report's records and rule verdicts (build_report stores it in Report::node_actions).
NodeActions node_actions(const Report& report);

}  // namespace gpuaccept::report
