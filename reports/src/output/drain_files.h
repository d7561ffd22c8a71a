// The files that hand a run's bad nodes back to Slurm (model/node_actions.h):
//   bad-nodes.txt    the nodes to drain as one Slurm hostlist ("gpu[01-03,07]"), or empty
//   watch-nodes.txt  the nodes only to watch (fleet outliers, warnings), the same way
//   drain.sh         one `scontrol update NodeName=... State=DRAIN Reason=...` per bad node
// drain.sh is never run by the report: `make -f Makefile.slurm drain RUN=<run dir>` is the
// operator's deliberate step. Every node name and reason is single-quoted for the shell, and
// a reason holds no control characters and at most kMaxDrainReason bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "model/node_actions.h"

namespace gpuaccept::report {

// Slurm 22.05 sets no limit on a reason; `sinfo -R` and `scontrol show node` show a short
// one whole, and NHC's reasons are of this order.
inline constexpr std::size_t kMaxDrainReason = 200;

// "gpuaccept <run id>: <first problem>", control characters made spaces, cut to
// kMaxDrainReason bytes on a UTF-8 character boundary ("..." marks a cut).
std::string drain_reason(std::string_view run_id, std::string_view first_problem);

// `text` as one single-quoted shell word: 'it'\''s'.
std::string shell_quote(std::string_view text);

// The nodes of `actions` as one hostlist ("gpu[01-03,07]"); "" when empty.
std::string hostlist_of(const std::vector<NodeAction>& actions);

// hostlist_of and a newline, or "" when `actions` is empty.
std::string hostlist_file_text(const std::vector<NodeAction>& actions);

// The whole drain.sh; with no bad node, a script that says so and exits 0.
std::string drain_script_text(std::string_view run_id, std::string_view run_dir, const NodeActions& actions);

}  // namespace gpuaccept::report
