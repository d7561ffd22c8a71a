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

// The run id: $GPUACCEPT_RUN_ID, else SLURM_ARRAY_JOB_ID, else SLURM_JOB_ID, else
// "" (the caller then makes a local id, once, on rank 0).
std::string run_id_from_env(const EnvLookup& env);

// "local-20261123T101500Z-4242": for a phase started by hand.
std::string make_local_run_id();

// Creates the run directory and proves a file can be written there. Throws
// InputError naming the directory and the reason when it cannot.
void prepare_run_dir(const std::filesystem::path& dir);

EnvLookup process_env();

}  // namespace gpuaccept
