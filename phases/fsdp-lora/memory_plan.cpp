#include "fsdp-lora/memory_plan.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "common/error.h"
#include "train/flash_attention_shape.h"
#include "fsdp-lora/lora_buckets.h"

namespace gpuaccept::fsdp {

namespace {

constexpr std::uint64_t kBf16 = 2, kFp32 = 4;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

bool targets(const LoraConfig& lora, Projection p) {
  return std::find(lora.targets.begin(), lora.targets.end(), p) != lora.targets.end();
}

// The sizes one layer's activations are made of, for N = B x T tokens.
struct Dims {
  std::uint64_t N, C, Q, KV, I, r, B, T, NH;
};

// What backward needs of one layer, kept from its forward (or rebuilt by recomputing it):
//   layer input x (N, C)                    RMSNorm 1 backward; also the residual
//   RMSNorm 1's 1/rms (N) fp32              RMSNorm 1 backward
//   normed input (N, C)                     only when q, k or v has LoRA: its A's gradient is
//                                           dropout(normed)^T x d(A-product)
//   q, k, v after RoPE (N, Q), (N, KV) x 2  flash attention backward (RoPE's backward is the
//                                           inverse rotation: nothing stored)
//   attention output (N, Q)                 flash attention backward, and o_proj's input
//   its log-sum-exp (B, NH, T) fp32         flash attention backward
//   residual after attention (N, C)         RMSNorm 2 backward
//   RMSNorm 2's 1/rms (N) fp32
//   normed MLP input (N, C)                 only when gate or up has LoRA
//   gate and up outputs (N, I) each         SwiGLU backward
//   SwiGLU output (N, I)                    only when down has LoRA (down's input)
//   per LoRA target, A x dropout(input) (N, r)   its B's gradient
// Not kept: dropout masks (regenerated from the step's seed by a counter-based generator), the
// frozen projections' inputs otherwise (a frozen weight needs no gradient, so its matmul's
// backward needs only the output gradient), RoPE's sines and cosines (recomputed).
std::uint64_t layer_activation_bytes(const Dims& d, const LoraConfig& lora) {
  const bool qkv = targets(lora, Projection::q) || targets(lora, Projection::k) || targets(lora, Projection::v);
  const bool gate_up = targets(lora, Projection::gate) || targets(lora, Projection::up);
  std::uint64_t bytes = d.N * d.C * kBf16                // layer input
                        + d.N * kFp32                    // 1/rms
                        + (qkv ? d.N * d.C * kBf16 : 0)  // normed input
                        + d.N * (d.Q + 2 * d.KV) * kBf16 // q, k, v
                        + d.N * d.Q * kBf16              // attention output
                        + d.B * d.NH * d.T * kFp32       // log-sum-exp
                        + d.N * d.C * kBf16              // residual after attention
                        + d.N * kFp32                    // 1/rms
                        + (gate_up ? d.N * d.C * kBf16 : 0)
                        + 2 * d.N * d.I * kBf16          // gate, up
                        + (targets(lora, Projection::down) ? d.N * d.I * kBf16 : 0);
  bytes += static_cast<std::uint64_t>(lora.targets.size()) * d.N * d.r * kBf16;  // A-products
  return bytes;
}

// Buffers allocated once and reused by whichever layer is computing, plus the model's tail:
//   residual stream's gradient (N, C) fp32, accumulated over the layers
//   a normed input's gradient (N, C) fp32 (q, k, v or gate, up input gradients summed into it)
//   attention output's gradient (N, Q); q, k, v gradients (N, Q + 2 KV)
//   attention backward's workspace: with the flash kernels, the dS tiles their default backward
//   (variant 4) stores, the causal half of (B, NH, T, T) bf16 (0.95 GB at B 2, T 4096, 28 heads),
//   and the row sums of dO x O (B, NH, T) fp32; with the GEMM attention (shapes the kernels do
//   not take: small test models), (N, Q) fp32
//   gate and up gradients (N, I) each (down's input gradient is computed into one of them first)
//   SwiGLU output (N, I) when it is not kept (down's forward input)
//   a projection's output before the residual add (N, C)
//   the LoRA dropout copies of the inputs of one group of projections reading the same input
//   (N, lora_dropout_scratch_columns: q, k and v's three at hidden 3584), and the group's
//   d(A-product)s (3, N, r)
//   final norm: its input (N, C), its output (N, C), 1/rms (N) fp32, the output's gradient (N, C) fp32
//   token ids and targets (N) int32 each, per-token losses (N) fp32
// gpu/lora_linear.h's groups: at most q, k and v (kernels.h's kMaxSharedDropouts).
constexpr std::uint64_t kMaxGroup = 3;

std::uint64_t working_bytes(const Dims& d, const LoraConfig& lora, const QwenConfig& c) {
  const auto dropout_columns = static_cast<std::uint64_t>(lora_dropout_scratch_columns(c, lora));
  const bool keeps_swiglu = targets(lora, Projection::down);
  const int B = static_cast<int>(d.B), T = static_cast<int>(d.T);
  const std::uint64_t attention_workspace =
      train::flash_attention_supported(T, c.heads, c.kv_heads, c.head_dim)
          ? train::flash_backward_ds_workspace_elems(B, T, c.heads) * kBf16 + d.B * d.NH * d.T * kFp32
          : d.N * d.Q * kFp32 + d.B * d.NH * d.T * kFp32;
  return d.N * d.C * kFp32                          // residual gradient
         + d.N * d.C * kFp32                        // normed input gradient
         + d.N * d.Q * kBf16                        // attention output gradient
         + d.N * (d.Q + 2 * d.KV) * kBf16           // q, k, v gradients
         + attention_workspace                      // attention backward
         + 2 * d.N * d.I * kBf16                    // gate, up gradients
         + (keeps_swiglu ? 0 : d.N * d.I * kBf16)   // SwiGLU output, forward only
         + d.N * d.C * kBf16                        // projection output
         + (lora.targets.empty() ? 0 : d.N * dropout_columns * kBf16 + kMaxGroup * d.N * d.r * kBf16)
         + 2 * d.N * d.C * kBf16 + d.N * kFp32 + d.N * d.C * kFp32  // final norm
         + 3 * d.N * 4;                             // ids, targets, losses
}

std::string gib(std::uint64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / kGiB); }

}  // namespace

BaseFootprint base_footprint(const ShardPlan& shards, int prefetch_layers, bool offload_cpu) {
  BaseFootprint b;
  if (offload_cpu) {
    b.shards_gpu = shards.final_norm_bytes();
    b.shards_host_pinned = shards.rank_base_bytes() - shards.final_norm_bytes();
  } else {
    b.shards_gpu = shards.rank_base_bytes();
  }
  // The shards come from peers or the host straight into their own slot of a gather buffer,
  // gathered in place (gpu/fsdp_weights.h): no staging buffer.
  if (shards.world_size > 1 || offload_cpu) {
    const std::uint64_t in_flight = static_cast<std::uint64_t>(prefetch_layers) + 1;  // computing + gathered ahead
    b.layer_gather = in_flight * shards.layer_gather_bytes();
    b.vocab_gather = shards.vocab_gather_bytes();
  }
  return b;
}

MemoryPlan plan_memory(const QwenConfig& c, const LoraConfig& lora, const ShardPlan& shards, int micro_batch,
                       int seq_len, bool recompute, bool offload_cpu, int prefetch_layers, bool shard_optimizer,
                       RecomputeKeep recompute_keep) {
  if (micro_batch < 1 || seq_len < 1 || prefetch_layers < 1)
    throw std::invalid_argument(fmt::format("memory plan: micro_batch {}, seq_len {} and prefetch_layers {} must be positive",
                                            micro_batch, seq_len, prefetch_layers));
  if (shards.model.hidden != c.hidden || shards.model.vocab != c.vocab || shards.model.layers != c.layers ||
      shards.model.intermediate != c.intermediate)
    throw std::invalid_argument("memory plan: the shard plan is for another model");
  MemoryPlan m;
  m.world_size = shards.world_size;
  m.micro_batch = micro_batch;
  m.seq_len = seq_len;
  m.prefetch_layers = prefetch_layers;
  m.recompute = recompute;
  m.recompute_keep = recompute_keep;
  m.offload_cpu = offload_cpu;
  const BaseFootprint base = base_footprint(shards, prefetch_layers, offload_cpu);
  m.base_shards_gpu = base.shards_gpu;
  m.base_shards_host_pinned = base.shards_host_pinned;
  m.layer_gather = base.layer_gather;
  m.vocab_gather = base.vocab_gather;

  const std::uint64_t P = lora_parameter_count(c, lora);
  m.lora_weights_bf16 = P * kBf16;
  m.lora_master_fp32 = P * kFp32;
  m.lora_grads_fp32 = P * kFp32;
  // Sliced as the trainer slices the padded buffer; P (no padding) is within one alignment of it.
  m.shard_optimizer = shard_optimizer && shards.world_size > 1;
  m.adam_moments_fp32 =
      2 * (m.shard_optimizer ? lora_slice_stride(P, shards.world_size, kLoraSliceAlign) : P) * kFp32;

  const std::uint64_t B = micro_batch, T = seq_len;
  const Dims d{B * T,
               static_cast<std::uint64_t>(c.hidden),
               static_cast<std::uint64_t>(c.heads) * c.head_dim,
               static_cast<std::uint64_t>(c.kv_heads) * c.head_dim,
               static_cast<std::uint64_t>(c.intermediate),
               static_cast<std::uint64_t>(lora.rank),
               B,
               T,
               static_cast<std::uint64_t>(c.heads)};
  const std::uint64_t L = c.layers;
  m.layers = c.layers;
  m.layer_input_bytes = d.N * d.C * kBf16;
  m.layer_activation_bytes = layer_activation_bytes(d, lora);
  m.attention_output_bytes = d.N * d.Q * kBf16 + d.B * d.NH * d.T * kFp32;
  m.attention_block_bytes = d.N * (d.Q + 2 * d.KV) * kBf16 + d.N * d.C * kBf16;
  // With recompute: each layer's input, the checkpoint it is rebuilt from, and what
  // recompute_keep adds, which the rebuilt layer then reads instead of computing again (set
  // without recompute too, for check_fits' suggestion).
  const std::uint64_t extra = (recompute_keep != RecomputeKeep::input ? m.attention_output_bytes : 0) +
                              (recompute_keep == RecomputeKeep::attention_block ? m.attention_block_bytes : 0);
  m.kept_per_layer = m.layer_input_bytes + extra;
  if (recompute) {
    m.activations_kept = L * m.kept_per_layer;
    m.recomputed_layer = m.layer_activation_bytes - extra;
  } else {
    m.activations_kept = L * m.layer_activation_bytes;
  }
  m.working_buffers = working_bytes(d, lora, c);
  // fp32 logits of one chunk (softmax and its gradient computed in place) and a bf16 copy of that
  // gradient for the head's input-gradient matmul (cuBLASLt takes operands of one type).
  m.logits_workspace = std::min(kLogitsChunkTokens, d.N) * static_cast<std::uint64_t>(c.vocab) * (kFp32 + kBf16);
  m.cublaslt_workspace = kCublasLtWorkspaceBytes;
  m.nccl_allowance = kNcclAllowanceBytes;
  return m;
}

std::vector<MemoryItem> MemoryPlan::gpu_items() const {
  return {
      {"base shards", base_shards_gpu},
      {"layer gather buffers", layer_gather},
      {"embedding/head gather buffer", vocab_gather},
      {"LoRA weights bf16", lora_weights_bf16},
      {"LoRA master weights fp32", lora_master_fp32},
      {"LoRA gradients fp32", lora_grads_fp32},
      {shard_optimizer ? "AdamW m and v fp32 (this rank's slice)" : "AdamW m and v fp32", adam_moments_fp32},
      {!recompute                                         ? "activations kept for backward"
       : recompute_keep == RecomputeKeep::input           ? "activations kept (layer inputs)"
       : recompute_keep == RecomputeKeep::attention       ? "activations kept (layer inputs, attention outputs)"
                                                          : "activations kept (layer inputs, attention blocks)",
       activations_kept},
      {"recomputed layer", recomputed_layer},
      {"working buffers", working_buffers},
      {"logits chunk", logits_workspace},
      {"cuBLASLt workspace", cublaslt_workspace},
      {"NCCL allowance", nccl_allowance},
  };
}

std::uint64_t MemoryPlan::total() const {
  std::uint64_t sum = 0;
  for (const MemoryItem& item : gpu_items()) sum += item.bytes;
  return sum;
}

std::string MemoryPlan::describe() const {
  std::string out = fmt::format("GPU memory per rank ({} GPUs, micro_batch {}, seq_len {}, recompute {}, offload {}):\n",
                                world_size, micro_batch, seq_len, recompute ? "on" : "off", offload_cpu ? "cpu" : "none");
  for (const MemoryItem& item : gpu_items())
    if (item.bytes > 0) out += fmt::format("  {:<32} {:>10}\n", item.name, gib(item.bytes));
  out += fmt::format("  {:<32} {:>10}\n", "total", gib(total()));
  if (offload_cpu) out += fmt::format("pinned host memory per rank: {} (base shards)\n", gib(base_shards_host_pinned));
  return out;
}

void MemoryPlan::check_fits(std::uint64_t gpu_bytes_free, std::uint64_t headroom) const {
  const std::uint64_t need = total() + headroom;
  if (need <= gpu_bytes_free) return;
  std::vector<MemoryItem> items = gpu_items();
  std::sort(items.begin(), items.end(), [](const MemoryItem& a, const MemoryItem& b) { return a.bytes > b.bytes; });
  std::vector<std::string> biggest;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, items.size()); ++i)
    biggest.push_back(fmt::format("{} {}", items[i].name, gib(items[i].bytes)));
  // Only the changes not already in force, each with what it saves.
  std::vector<std::string> fixes;
  if (!recompute)
    fixes.push_back(fmt::format("fsdp_lora.recompute: true (keeps what recompute_keep {} says of each layer: {} "
                                "instead of {})",
                                recompute_keep_name(recompute_keep),
                                gib(static_cast<std::uint64_t>(layers) * kept_per_layer + layer_activation_bytes -
                                    (kept_per_layer - layer_input_bytes)),
                                gib(activations_kept)));
  // What recompute_keep adds is kept for every layer and rebuilt for one instead.
  if (recompute && recompute_keep != RecomputeKeep::input && layers > 1)
    fixes.push_back(fmt::format("fsdp_lora.recompute_keep: input (keeps only each layer's input: {} less)",
                                gib(static_cast<std::uint64_t>(layers - 1) * (kept_per_layer - layer_input_bytes))));
  if (!offload_cpu) fixes.push_back(fmt::format("fsdp_lora.offload: cpu (the base shards, {}, to pinned host memory)", gib(base_shards_gpu)));
  fixes.push_back(fmt::format("more GPUs (each holds 1/N of the base: {} per GPU at {} GPU{})",
                              gib(base_shards_gpu + base_shards_host_pinned), world_size, world_size == 1 ? "" : "s"));
  fixes.push_back("a smaller fsdp_lora.micro_batch or seq_len (activations scale with them)");
  throw InputError(fmt::format(
      "fsdp-lora does not fit in GPU memory: the plan needs {} per GPU ({} + {} headroom) but the GPU has {} free "
      "({} bytes). Biggest: {}. Try {}",
      gib(need), gib(total()), gib(headroom), gib(gpu_bytes_free), gpu_bytes_free, fmt::join(biggest, ", "),
      fmt::join(fixes, "; or ")));
}

}  // namespace gpuaccept::fsdp
