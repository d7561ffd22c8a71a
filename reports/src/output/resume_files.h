// The files that hand a run's good nodes back to users (model/good_nodes.h):
//   good-nodes.txt  the nodes that passed every phase, as one Slurm hostlist, or empty
//   resume.sh       resumes those of them that are drained and takes them out of the run's
//                   maintenance reservation
// resume.sh is never run by the report: `make -f Makefile.slurm resume RUN=<run dir>` is the
// operator's deliberate step, as `drain` is. Every node and reservation name is single-quoted.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model/good_nodes.h"

namespace gpuaccept::report {

// hostlist of the good nodes and a newline, or "" when there is none.
std::string good_nodes_file_text(const GoodNodes& good);

// "2026-11-28T00:49:38Z" -> seconds since the epoch; nullopt for anything else.
std::optional<long long> utc_seconds(std::string_view iso8601);

// The whole resume.sh; with no good node, a script that says why none and exits 0.
std::string resume_script_text(std::string_view run_id, std::string_view run_dir, const GoodNodes& good);

}  // namespace gpuaccept::report
