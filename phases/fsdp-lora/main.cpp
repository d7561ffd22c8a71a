// gpuaccept-fsdp-lora: LoRA fine-tuning of a Qwen2-shaped model with its frozen base sharded
// across every GPU of the job (FSDP-style all-gathers), in CUDA C++ with NCCL; checks the
// gradients through the sharded path against a CPU reference, learning and replica equality,
// and measures throughput, MFU, all-gather overlap and memory (fsdp_lora_run.h).
#include "fsdp-lora/fsdp_config.h"
#include "fsdp-lora/fsdp_lora_run.h"
#include "phase/phase_runner.h"

using namespace gpuaccept;

int main(int argc, char** argv) {
  fsdp::FsdpFlags flags;
  return run_phase(argc, argv,
                   {.name = "fsdp-lora",
                    .description = "sharded LoRA fine-tuning of a Qwen2-shaped model: gradients vs a CPU reference "
                                   "through the sharded path, loss, replicas, tokens/s, MFU, all-gather overlap, memory",
                    .add_options = [&](CLI::App& app) { fsdp::add_fsdp_flags(app, flags); },
                    .body = [&](PhaseContext& ctx) {
                      const fsdp::FsdpConfig config = fsdp::load_fsdp_config(ctx.config, flags);
                      fsdp::run_fsdp_lora_phase(ctx, config);
                    }});
}
