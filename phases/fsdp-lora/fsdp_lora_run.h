// The fsdp-lora phase from start to end, on every rank:
//   0. every rank's GPU exchanged: a rank without one (or CUDA unusable) makes every check
//      SKIP with the reason (the CPU-only test cluster runs the pipeline that way);
//   1. the memory plan (memory_plan.h) against each GPU's free memory, before allocating: a
//      configuration that cannot fit is a FAIL naming the figures, and nothing runs;
//   2. gradient check: the tiny shape through the FSDP path (base sharded over all ranks and
//      gathered) against the float64 CPU reference (fsdp_gradient_check.h);
//   3. training on all GPUs with the configured model (fsdp_trainer.h): loss curve, learning,
//      no NaN/Inf, throughput, MFU, all-gather time and its exposed part, memory; the training
//      checkpoint saved on the way (train/checkpoint_drill.h);
//   4. replicas: every rank's LoRA weights hashed and compared bit for bit; the frozen base
//      checked unchanged;
//   5. the checkpoint restored and the steps after it resumed, bit for bit as the main run;
//   6. equivalence (1 GPU replaying N ranks' batches) and scaling (single_gpu, node).
// The base comes from the seed or a Hugging Face checkpoint (fsdp_lora.checkpoint_dir, checked
// before any GPU work), on the GPU or in pinned host memory (fsdp_lora.offload: cpu).
// A rank that dies or hangs ends it through RankRuntime (src/cuda/rank_runtime.h), as ddp:
// what was measured is kept and the failure recorded, naming the rank when it can.
#pragma once

#include "fsdp-lora/fsdp_config.h"
#include "phase/phase_runner.h"

namespace gpuaccept::fsdp {

void run_fsdp_lora_phase(PhaseContext& ctx, const FsdpConfig& config);

}  // namespace gpuaccept::fsdp
