// gpuaccept-nccl-scaling: NCCL collectives from 8 B to 8 GiB at every scale of the job
// (within each node, across nodes, all GPUs), figures comparable to nccl-tests', every
// result verified on the device, pairwise tests that name the slow node or GPU pair, and
// deadlines that survive a dead or hung rank. One rank per GPU, `srun --mpi=pmix`.
// Design and choices: phases/nccl-scaling/README.md.
#include "nccl-scaling/options.h"
#include "nccl-scaling/sweep.h"
#include "phase/phase_runner.h"

using namespace gpuaccept;

int main(int argc, char** argv) {
  static nccl_scaling::CliValues cli;
  return run_phase(argc, argv,
                   {.name = "nccl-scaling",
                    .description = "NCCL collectives across sizes and scales, verified, with slow-link isolation "
                                   "(nccl-tests' method and figures).",
                    .add_options = [](CLI::App& app) { nccl_scaling::add_cli_options(app, cli); },
                    .body =
                        [](PhaseContext& ctx) {
                          nccl_scaling::run_nccl_scaling(ctx, nccl_scaling::resolve_options(cli, ctx.config));
                        }});
}
