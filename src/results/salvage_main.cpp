// gpuaccept-salvage: after a phase's job step failed, writes <run>/<phase>.h5 from the ranks'
// checkpoints if the step did not write it (results/salvage.h). Run by sbatch/common.sh on
// the batch host, outside the step, with the same environment as the phase, so it finds the
// same run directory. Exit code: 0 when the step had written its file, 1 when it salvaged
// one (the step failed), 2 on unusable input.
#include <CLI/CLI.hpp>

#include "common/log.h"
#include "results/run_dir.h"
#include "results/salvage.h"

using namespace gpuaccept;

int main(int argc, char** argv) {
  std::string results, run_id, phase, why = "the job step failed";
  int ranks = 0;
  CLI::App app{"Writes a phase's results file from its ranks' checkpoints after a failed job step",
               "gpuaccept-salvage"};
  app.add_option("--phase", phase, "the phase (discover, smoke, ...)")->required();
  app.add_option("--results", results, "results root (default: $GPUACCEPT_RESULTS, else ./results)");
  app.add_option("--run-id", run_id, "run id (default: $GPUACCEPT_RUN_ID, the array job or the job)");
  app.add_option("--why", why, "how the step ended, for the ERROR record");
  app.add_option("--ranks", ranks, "ranks the step had, when no checkpoint tells");
  CLI11_PARSE(app, argc, argv);
  log_context().phase = "salvage";
  try {
    const auto env = process_env();
    run_id = resolve_run_id(run_id, env);
    if (run_id.empty()) {
      log_error("no run id: give --run-id or run inside the Slurm job");
      return 2;
    }
    const auto run_dir = results_root(results, env) / run_id;
    const auto written = salvage_phase_file(run_dir, phase, why, ranks);
    if (!written) {
      log_info("{}: the step wrote it; nothing to salvage", (run_dir / (phase + ".h5")).string());
      return 0;
    }
    log_error("{} assembled from the ranks' checkpoints: {}", written->string(), why);
    return 1;
  } catch (const std::exception& e) {
    log_error("{}", e.what());
    return 2;
  }
}
