// gpuaccept-ddp: GPT-2 data-parallel training (forward, backward, NCCL all-reduce overlapped, AdamW; loss, replicas and throughput).
// Not implemented in this build yet. The binary exists so the pipeline's array
// index for it runs, and it says so: every rank records SKIP with the reason,
// never PASS.
#include "phase/phase_runner.h"

using namespace gpuaccept;

int main(int argc, char** argv) {
  return run_phase(argc, argv,
                   {.name = "ddp",
                    .description = "GPT-2 data-parallel training (forward, backward, NCCL all-reduce overlapped, AdamW; loss, replicas and throughput) (not implemented in this build: records SKIP)",
                    .body = [](PhaseContext& ctx) {
                      ctx.results.check("ddp", Status::Skip,
                                        "the ddp phase is not implemented in this build of gpuaccept; nothing was measured");
                    }});
}
