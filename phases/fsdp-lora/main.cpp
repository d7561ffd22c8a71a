// gpuaccept-fsdp-lora: sharded LoRA fine-tuning.
// Not implemented in this build yet. The binary exists so the pipeline's array
// index for it runs, and it says so: every rank records SKIP with the reason,
// never PASS.
#include "phase/phase_runner.h"

using namespace gpuaccept;

int main(int argc, char** argv) {
  return run_phase(argc, argv,
                   {.name = "fsdp-lora",
                    .description = "sharded LoRA fine-tuning (not implemented in this build: records SKIP)",
                    .body = [](PhaseContext& ctx) {
                      ctx.results.check("fsdp-lora", Status::Skip,
                                        "the fsdp-lora phase is not implemented in this build of gpuaccept; nothing was measured");
                    }});
}
