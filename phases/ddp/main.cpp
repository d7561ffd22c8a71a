// gpuaccept-ddp: GPT-2 trained data-parallel on every GPU of the job, in CUDA C++ with
// NCCL; checks gradients against a CPU reference, learning, replica equality, 1-vs-N
// equivalence, and measures throughput, MFU and scaling (ddp_run.h).
#include "ddp/ddp_config.h"
#include "ddp/ddp_run.h"
#include "phase/phase_runner.h"

using namespace gpuaccept;

int main(int argc, char** argv) {
  ddp::DdpFlags flags;
  return run_phase(argc, argv,
                   {.name = "ddp",
                    .description = "GPT-2 data-parallel training: gradients vs a CPU reference, loss, replicas, "
                                   "1-vs-N equivalence, tokens/s, MFU and scaling",
                    .add_options = [&](CLI::App& app) { ddp::add_ddp_flags(app, flags); },
                    .body = [&](PhaseContext& ctx) {
                      const ddp::DdpConfig config = ddp::load_ddp_config(ctx.config, flags);
                      ddp::run_ddp_phase(ctx, config);
                    }});
}
