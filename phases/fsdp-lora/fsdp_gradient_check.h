// The fsdp-lora phase's correctness check: the tiny Qwen2 shape (qwen_config.h's qwen_tiny,
// LoRA rank 2 on all seven projections, dropout 0.25) run through the FSDP path (its random base
// sharded across the communicator's ranks and all-gathered layer by layer by FsdpWeights) on the
// GPU, against the float64 CPU reference (cpu_reference.h) on the same numbers: the same base
// built on the host (base_init.h), the same bf16-rounded adapters, the GPU's dropout masks
// replayed on the host. Loss and every LoRA gradient tensor are compared.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nccl.h>

#include "fsdp-lora/qwen_config.h"

namespace gpuaccept::fsdp {

struct LoraTensorError {
  std::string name;  // "layers.1.q_proj.A"
  double rel_l2 = 0;  // ||g_gpu - g_cpu|| / ||g_cpu||
};

struct FsdpGradientCheck {
  QwenConfig config{};
  LoraConfig lora;
  int B = 0, T = 0, ranks = 1;
  bool recompute = true;
  double loss_gpu = 0, loss_cpu = 0;
  std::vector<LoraTensorError> tensors;
  const LoraTensorError& worst() const;  // the largest rel_l2 (tensors is never empty)
};

// Collective over comm (every rank of it calls it, with its rank; comm nullptr when alone).
// Each rank runs the same micro-batch, so each must match the reference on its own.
// recompute: the model's activation recompute, as the phase trains (gpu/qwen_model.h).
// offload: the tiny base's shards in pinned host memory, as fsdp_lora.offload: cpu keeps them.
FsdpGradientCheck run_fsdp_gradient_check(std::uint64_t seed, int rank, int ranks, ncclComm_t comm, bool recompute,
                                          bool offload = false);

}  // namespace gpuaccept::fsdp
