// How many bytes each rank's GPU needs for one fsdp-lora run, item by item, worked out before
// anything is allocated: so that a run that cannot fit is refused up front with the figures and
// what to change, instead of dying of an out-of-memory error halfway through step 1.
// Every figure is per rank, in bytes; all buffers are allocated up front and reused, so the sum
// is the peak (plus what the CUDA context itself takes, which the GPU's free bytes already omit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fsdp-lora/qwen_config.h"
#include "fsdp-lora/shard_plan.h"

namespace gpuaccept::fsdp {

// The cross-entropy runs over this many tokens at a time, so the logits are never (B x T, V) at
// once: 1024 x 152064 x 4 bytes = 0.58 GiB for Qwen2-7B instead of 4.6 GiB at 2 x 4096 tokens.
inline constexpr std::uint64_t kLogitsChunkTokens = 1024;
inline constexpr std::uint64_t kCublasLtWorkspaceBytes = 32ull << 20;  // 32 MiB
// NCCL's own buffers and its communicators' device state: measured use is a few hundred MiB
// per communicator; 1 GiB covers the phase's few communicators.
inline constexpr std::uint64_t kNcclAllowanceBytes = 1ull << 30;

// The frozen base's bytes for one rank of gpu::FsdpWeights over `shards`, as it allocates them:
// the shards on the GPU, or with offload in pinned host memory (the final norm, a few KiB, stays
// on the GPU); and when it gathers (more than one rank, or offload) prefetch_layers + 1 layer
// buffers and one for the embedding or head. One rank without offload holds the whole base and
// gathers nothing.
struct BaseFootprint {
  std::uint64_t shards_gpu = 0, shards_host_pinned = 0;
  std::uint64_t layer_gather = 0, vocab_gather = 0;
  std::uint64_t gpu() const { return shards_gpu + layer_gather + vocab_gather; }
};
BaseFootprint base_footprint(const ShardPlan& shards, int prefetch_layers, bool offload_cpu);

struct MemoryItem {
  std::string name;
  std::uint64_t bytes;
};

struct MemoryPlan {
  // The shape it was planned for, for the messages.
  int world_size = 1, layers = 1, micro_batch = 1, seq_len = 1, prefetch_layers = 1;
  bool recompute = true, offload_cpu = false;
  RecomputeKeep recompute_keep = RecomputeKeep::attention_block;

  // Base weights (bf16)
  std::uint64_t base_shards_gpu = 0;   // this rank's shards (layers, embedding, head) and the final norm;
                                       // with offload only the final norm (the shards are copied into
                                       // their slot of the gather buffers: no staging)
  std::uint64_t layer_gather = 0;      // prefetch_layers + 1 full padded layers (none on one GPU
                                       // without offload: base_footprint)
  std::uint64_t vocab_gather = 0;      // the full embedding or head (used at different times: one buffer)
  // LoRA: weights, master and gradients whole on every rank; the AdamW moments whole too, or
  // (fsdp_lora.grad_reduce reduce_scatter) of this rank's slice only
  std::uint64_t lora_weights_bf16 = 0; // the copy the matmuls read
  std::uint64_t lora_master_fp32 = 0;  // what AdamW updates
  std::uint64_t lora_grads_fp32 = 0;
  std::uint64_t adam_moments_fp32 = 0; // m and v
  bool shard_optimizer = false;        // reduce_scatter: the moments are one slice of N
  // Activations (bf16 unless said)
  std::uint64_t layer_input_bytes = 0;       // (B, T, C): what recompute keeps of a layer
  std::uint64_t attention_output_bytes = 0;  // a layer's attention output (B, T, NH HD) and its
                                             // log-sum-exp (B, NH, T) fp32 (recompute_keep attention)
  std::uint64_t attention_block_bytes = 0;   // its q, k, v and residual after attention (with
                                             // attention_block too)
  std::uint64_t kept_per_layer = 0;          // what forward keeps of each layer with recompute
  std::uint64_t layer_activation_bytes = 0;  // what backward needs of one layer (memory_plan.cpp lists it)
  std::uint64_t activations_kept = 0;        // kept from forward to backward, all layers
  std::uint64_t recomputed_layer = 0;        // with recompute: one layer's set, rebuilt in backward
                                             // (less the attention's part where that is kept)
  std::uint64_t working_buffers = 0;         // gradients and scratch of the layer computing, head's tail
  std::uint64_t logits_workspace = 0;        // one chunk of the cross-entropy
  std::uint64_t cublaslt_workspace = 0;
  std::uint64_t nccl_allowance = 0;
  // Host
  std::uint64_t base_shards_host_pinned = 0;  // with offload: the shards live here

  // The GPU figures with their names, in the order above (zero ones included).
  std::vector<MemoryItem> gpu_items() const;
  std::uint64_t total() const;  // GPU bytes per rank
  // One line per figure, in GiB, then the total (and the pinned host bytes with offload).
  std::string describe() const;
  // Throws InputError when total() + headroom exceeds gpu_bytes_free: the message names the
  // total, the biggest items, the GPU's free bytes and what would make it fit.
  void check_fits(std::uint64_t gpu_bytes_free, std::uint64_t headroom) const;
};

// Throws std::invalid_argument when micro_batch, seq_len or prefetch_layers is not positive,
// or the shard plan is for another model.
// shard_optimizer: fsdp_lora.grad_reduce reduce_scatter (lora_buckets.h's slices);
// recompute_keep: fsdp_lora.recompute_keep (qwen_config.h; gpu/qwen_model.h, Memory).
MemoryPlan plan_memory(const QwenConfig& c, const LoraConfig& lora, const ShardPlan& shards, int micro_batch,
                       int seq_len, bool recompute, bool offload_cpu, int prefetch_layers, bool shard_optimizer = false,
                       RecomputeKeep recompute_keep = RecomputeKeep::attention_block);

}  // namespace gpuaccept::fsdp
