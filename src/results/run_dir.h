// Where a job's results go: <results>/<run id>/<phase>.h5. All phases of one
// pipeline share a run directory because an array's tasks share SLURM_ARRAY_JOB_ID.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace gpuaccept {

using EnvLookup = std::function<const char*(const char*)>;

// The results root: --results, else $GPUACCEPT_RESULTS, else ./results.
std::filesystem::path results_root(const std::string& flag, const EnvLookup& env);

// The run id to use: `flag` (--run-id) when given, else $GPUACCEPT_RUN_ID, else
// SLURM_ARRAY_JOB_ID (all phases of a pipeline array share it), else SLURM_JOB_ID; "" when
// none says (the caller then makes a local id, once, on rank 0). A run id names one directory under the results root, so it must be one safe path
// component: 1-128 characters of A-Z a-z 0-9 . _ -, not starting with '.' or '-' (no "..",
// no '/', nothing a shell or an HTML page would read as more than a name). Anything else
// throws InputError naming where the id came from and what is wrong.
std::string resolve_run_id(const std::string& flag, const EnvLookup& env);

// "local-20261123T101500Z-4242": for a phase started by hand.
std::string make_local_run_id();

// Creates the run directory and proves a file can be written there. Throws
// InputError naming the directory and the reason when it cannot.
void prepare_run_dir(const std::filesystem::path& dir);

EnvLookup process_env();

}  // namespace gpuaccept
