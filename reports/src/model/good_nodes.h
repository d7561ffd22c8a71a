// The nodes a run may hand back to users: good-nodes.txt and resume.sh (output/resume_files.h).
//
// A node is good when the run speaks for it whole: every phase of the run ran on it and measured
// it (a record about it that is not a SKIP), at least one of its GPUs was measured, nothing about
// it FAILed, ERRORed or WARNed (it is neither to drain nor to watch), and nothing the run could
// not pin on one node failed (a job-level FAIL or ERROR, a missing or unreadable file: any node
// may be its cause). Every other node is held back with the first reason that applies, so the
// report can say why a node is not handed back (a run on machines without GPUs hands back none).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gpuaccept::report {

struct HeldBackNode {
  std::string node;
  std::string why;  // "no GPU of it was measured", "smoke did not run there", ...
};

struct GoodNodes {
  std::vector<std::string> nodes;     // in the report's node order
  std::vector<HeldBackNode> held_back;  // every other node of the run, same order
  std::string reservation;  // the Slurm reservation the run's jobs ran in ("" for none)
  std::string run_ended;    // the latest end_time of the run's files (ISO 8601 UTC), "" when none says
};

struct Report;

// From the report's records, node actions and coverage (build_report stores it in Report::good_nodes).
GoodNodes good_nodes(const Report& report);

}  // namespace gpuaccept::report
