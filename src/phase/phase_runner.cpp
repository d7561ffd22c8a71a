#include "phase/phase_runner.h"

#include <cstdlib>

#include "common/error.h"
#include "common/log.h"
#include "phase/build_info.h"
#include "results/run_dir.h"
#include "slurm/slurm_env.h"

namespace gpuaccept {

std::string tool_version() { return GPUACCEPT_VERSION; }
std::string git_commit() { return GPUACCEPT_GIT_COMMIT; }

namespace {

std::map<std::string, std::string> file_attributes(const Config& config) {
  const SlurmEnv slurm = SlurmEnv::from_process();
  return {{"tool_version", tool_version()},
          {"git_commit", git_commit()},
          {"slurm_job_id", slurm.job_id},
          {"slurm_array_job_id", slurm.array_job_id},
          {"slurm_array_task_id", slurm.array_task_id},
          {"slurm_step_id", slurm.step_id},
          {"slurm_nodelist", slurm.nodelist},
          {"slurm_partition", slurm.partition},
          {"slurm_cluster", slurm.cluster_name},
          {"config_path", config.source_name()},
          {"config", config.text()}};
}

// Rank 0 chooses the run directory and proves it writable; every rank learns the
// outcome, so all stop together, before any work, when it is not.
std::filesystem::path agree_on_run_dir(World& world, const PhaseOptions& opts) {
  std::string verdict;
  if (world.rank() == 0) {
    const auto env = process_env();
    try {
      std::string id = resolve_run_id(opts.run_id, env);
      if (id.empty()) id = make_local_run_id();
      const auto dir = results_root(opts.results, env) / id;
      prepare_run_dir(dir);
      verdict = "ok:" + dir.string();
    } catch (const InputError& e) {
      verdict = std::string("error:") + e.what();
    }
  }
  verdict = world.broadcast_string(verdict, 0);
  if (verdict.starts_with("error:")) throw InputError(verdict.substr(6));
  return verdict.substr(3);
}

}  // namespace

int run_phase(int argc, char** argv, const PhaseDefinition& phase) {
  log_context().phase = phase.name;
  PhaseOptions opts;
  CLI::App app{phase.description, "gpuaccept-" + phase.name};
  app.add_option("--results", opts.results, "results root; the phase writes <results>/<run>/" + phase.name +
                                                 ".h5 (default: $GPUACCEPT_RESULTS, else ./results)");
  app.add_option("--config", opts.config, "YAML config (default: $GPUACCEPT_CONFIG, else built-in defaults)");
  app.add_option("--run-id", opts.run_id,
                 "run directory name (default: $GPUACCEPT_RUN_ID, else the Slurm array or job id)");
  phase.add_options(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (opts.config.empty())
    if (const char* c = std::getenv("GPUACCEPT_CONFIG")) opts.config = c;

  std::unique_ptr<World> world;
  Config config;
  std::filesystem::path run_dir;
  try {
    world = make_world();
    if (!opts.config.empty()) config = Config::load(opts.config);
    config.refuse_unknown_sections();  // a misspelt section ("smoek:") would leave every default in force
    run_dir = agree_on_run_dir(*world, opts);
  } catch (const std::exception& e) {
    log_error("{}", e.what());
    return 2;
  }
  log_rank0("{} ranks on {} nodes ({}), results to {}", world->size(), world->node_count(), world->backend(),
            run_dir.string());

  ResultWriter results(*world, phase.name, run_dir, file_attributes(config));
  PhaseContext ctx{*world, results, config, opts};
  try {
    phase.body(ctx);
  } catch (const std::exception& e) {
    log_error("{}", e.what());
    Record& r = results.check("phase", Status::Error, e.what());
    if (is_world_failure(e)) r.params[kCauseParam] = kCausePeer;  // a peer never joined a collective
  }
  const Status verdict = results.finish();
  log_rank0("{} verdict: {}", phase.name, to_string(verdict));
  return is_failure(verdict) ? 1 : 0;
}

}  // namespace gpuaccept
