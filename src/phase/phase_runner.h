// The life of every phase binary, in one place:
//   parse flags (--results, --config, --run-id, --help, and the phase's own)
//   -> World (PMIx or single) -> config -> results directory proven writable
//   -> the phase body, adding records -> gather and write <run>/<phase>.h5
//   -> exit code: 0 all PASS/SKIP, 1 a FAIL or ERROR, 2 unusable input.
// An exception from the body becomes an ERROR record naming rank and host, and
// everything recorded before it is still written.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "config/config.h"
#include "results/result_writer.h"
#include "world/world.h"

namespace gpuaccept {

struct PhaseOptions {
  std::string results;  // --results (else $GPUACCEPT_RESULTS, else ./results)
  std::string config;   // --config (else $GPUACCEPT_CONFIG, else none: built-in defaults)
  std::string run_id;   // --run-id (else $GPUACCEPT_RUN_ID / the Slurm job)
};

struct PhaseContext {
  World& world;
  ResultWriter& results;
  const Config& config;
  const PhaseOptions& options;
};

struct PhaseDefinition {
  std::string name;         // "discover": the results file is <name>.h5
  std::string description;  // one line for --help
  std::function<void(CLI::App&)> add_options = [](CLI::App&) {};
  std::function<void(PhaseContext&)> body;
};

int run_phase(int argc, char** argv, const PhaseDefinition& phase);

// Tool version and build commit, stamped into every results file.
std::string tool_version();
std::string git_commit();

}  // namespace gpuaccept
