// gpuaccept-smoke: is every node, GPU and the filesystem fit for a training job?
// Slurm state and binding, shared filesystem, GPU health, GEMM and bandwidth
// micro-benchmarks and a sustained load. Run one rank per GPU with `srun --mpi=pmix`;
// on a node without GPUs every GPU check records SKIP with the reason.
#include "phase/phase_runner.h"
#include "smoke/smoke_run.h"

using namespace gpuaccept;

int main(int argc, char** argv) {
  smoke::SmokeOptions opts;
  // Hidden, for tests of the operator's loop (tests/cluster/test_drain.sh): every rank on this
  // host records a FAIL, as a node with a real fault would, so the report has a node to drain.
  std::string debug_fail_node;
  return run_phase(argc, argv,
                   {.name = "smoke",
                    .description = "Slurm, binding, filesystem and GPU health checks; GEMM, memory and peer "
                                   "bandwidth micro-benchmarks; sustained load.",
                    .add_options =
                        [&](CLI::App& app) {
                          app.add_flag("--peer-matrix", opts.peer_matrix,
                                       "only the GPU-to-GPU bandwidth/latency matrix, by one process per node over "
                                       "all GPUs it sees");
                          app.add_option("--debug-fail-node", debug_fail_node)->group("");
                          app.footer(smoke::config_help());
                        },
                    .body =
                        [&](PhaseContext& ctx) {
                          if (!debug_fail_node.empty() && ctx.world.hostname() == debug_fail_node)
                            ctx.results.check("debug_fault", Status::Fail,
                                              "fault injected on this node by --debug-fail-node (a test)");
                          smoke::run_smoke(ctx, opts);
                        }});
}
