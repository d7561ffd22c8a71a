#include "phase/phase_runner.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_text.h"
#include "common/log.h"
#include "hw/rdma_ports.h"
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
          {"slurm_reservation", slurm.reservation},
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

// A crash (a library that fails on damaged input, a bug) leaves the phase's stack in the job
// log: the frames as module+offset (the shipped binaries are stripped; addr2line -e on the
// unstripped build names them), then the default action (core dump, the signal's exit status).
// A jump to a bad address (a call through a dangling pointer) cannot be unwound from: the
// word on top of the stack, the caller's return address, is printed too.
void print_crash(int sig, siginfo_t*, void* context) {
  const char* name = strsignal(sig);
  char line[200];
  int n = std::snprintf(line, sizeof line, "gpuaccept: fatal signal %d (%s); stack:\n", sig, name ? name : "?");
  if (n > 0) (void)!::write(STDERR_FILENO, line, static_cast<std::size_t>(std::min(n, 199)));
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  void* top = *reinterpret_cast<void* const*>(uc->uc_mcontext.gregs[REG_RSP]);
  Dl_info info{};
  if (dladdr(top, &info) && info.dli_fname) {
    n = std::snprintf(line, sizeof line, "gpuaccept: top of stack (a caller's return address?): %s(+%#lx)\n",
                      info.dli_fname,
                      static_cast<unsigned long>(static_cast<const char*>(top) - static_cast<const char*>(info.dli_fbase)));
    if (n > 0) (void)!::write(STDERR_FILENO, line, static_cast<std::size_t>(std::min(n, 199)));
  }
#else
  (void)context;
#endif
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// The node's RDMA port error counters at the start and the end of the phase, kept by the
// node's first rank as the document `port_counters` (docs/fabric.md): the report compares the
// earliest start with the latest end of the run, so a link that flapped or collected symbol
// errors while the pipeline loaded it is named, whichever phase was running.
class PortCounterSnapshots {
 public:
  PortCounterSnapshots(const World& world, ResultWriter& results, const std::string& phase)
      : results_(results), keeper_(world.local_rank() == 0) {
    if (!keeper_) return;
    doc_ = {{"host", world.hostname()}, {"phase", phase}, {"start_time", utc_now()}, {"start", read_port_counters()}};
    results_.set_document("port_counters", json_text(doc_));
  }
  void at_end() {
    if (!keeper_) return;
    doc_["end_time"] = utc_now();
    doc_["end"] = read_port_counters();
    results_.set_document("port_counters", json_text(doc_));
  }

 private:
  ResultWriter& results_;
  const bool keeper_;
  nlohmann::json doc_;
};

void install_crash_report() {
  void* warm[1];
  (void)backtrace(warm, 1);  // loads libgcc now: not inside the handler
  struct sigaction sa {};
  sa.sa_sigaction = print_crash;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

}  // namespace

int run_phase(int argc, char** argv, const PhaseDefinition& phase) {
  log_context().phase = phase.name;
  install_crash_report();
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
  PortCounterSnapshots counters(*world, results, phase.name);
  try {
    phase.body(ctx);
  } catch (const std::exception& e) {
    log_error("{}", e.what());
    Record& r = results.check("phase", Status::Error, e.what());
    if (is_world_failure(e)) r.params[kCauseParam] = kCausePeer;  // a peer never joined a collective
  }
  counters.at_end();
  const Status verdict = results.finish();
  log_rank0("{} verdict: {}", phase.name, to_string(verdict));
  return is_failure(verdict) ? 1 : 0;
}

}  // namespace gpuaccept
