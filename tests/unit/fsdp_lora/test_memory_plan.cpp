// The memory plan: Qwen2-7B fits one 80 GB GPU with and without recomputation, the base part
// shrinks as 1/N with the rest fixed, offload moves the shards to the host, and a plan that does
// not fit is refused with its figures and what to change.
#include <catch2/catch.hpp>

#include <string>

#include "common/error.h"
#include "fsdp-lora/lora_buckets.h"
#include "fsdp-lora/memory_plan.h"

using namespace gpuaccept;
using namespace gpuaccept::fsdp;

namespace {

constexpr std::uint64_t kGiB = 1ull << 30;
// What an H100 80GB HBM3 reports free once a CUDA context exists: about 79 GiB of its 79.6.
constexpr std::uint64_t kH100FreeBytes = 79ull * kGiB;

LoraConfig lora_on(const char* targets) {
  LoraConfig l;  // r 64, alpha 128
  l.targets = lora_targets_by_name(targets);
  return l;
}

MemoryPlan plan_7b(int world, bool recompute, bool offload = false, const char* targets = "qkvo", int micro_batch = 2,
                   int prefetch = 1) {
  return plan_memory(qwen2_7b, lora_on(targets), make_shard_plan(qwen2_7b, world), micro_batch, 4096, recompute, offload,
                     prefetch);
}

MemoryPlan plan_7b_keeping(RecomputeKeep keep) {
  return plan_memory(qwen2_7b, lora_on("qkvo"), make_shard_plan(qwen2_7b, 1), 2, 4096, true, false, 1, false, keep);
}

}  // namespace

TEST_CASE("Qwen2-7B on one GPU with recompute: the 15.2 GB base plus a few GiB", "[fsdp][memory]") {
  const MemoryPlan m = plan_7b_keeping(RecomputeKeep::attention);
  CHECK(m.base_shards_gpu == 2 * 7'615'616'512ull);  // 15.23 GB of bf16
  // Each layer's input, 2 x 4096 tokens x 3584 x 2 bytes, and its attention's output (the same
  // size: 28 heads of 128) and log-sum-exp (2 x 28 x 4096 fp32), for 28 layers.
  CHECK(m.layer_input_bytes == 2ull * 4096 * 3584 * 2);
  CHECK(m.attention_output_bytes == 2ull * 4096 * 3584 * 2 + 2ull * 28 * 4096 * 4);
  CHECK(m.activations_kept == 28 * (m.layer_input_bytes + m.attention_output_bytes));
  CHECK(m.recomputed_layer == m.layer_activation_bytes - m.attention_output_bytes);
  // recompute_keep input: the input only, and the whole layer rebuilt.
  const MemoryPlan lean = plan_7b_keeping(RecomputeKeep::input);
  CHECK(lean.activations_kept == 28 * lean.layer_input_bytes);
  CHECK(lean.recomputed_layer == lean.layer_activation_bytes);
  CHECK(lean.total() + 27 * m.attention_output_bytes == m.total());
  CHECK_THROWS_WITH(m.check_fits(4 * kGiB, 0), Catch::Contains("fsdp_lora.recompute_keep: input") &&
                                                   Catch::Contains("1.50 GiB less"));
  CHECK_THROWS_WITH(lean.check_fits(4 * kGiB, 0), !Catch::Contains("fsdp_lora.recompute_keep"));
  // attention_block: q, k, v (N x (3584 + 2 x 512)) and h_mid (N x 3584) bf16 kept too.
  // attention_block is the default.
  const MemoryPlan block = plan_7b_keeping(RecomputeKeep::attention_block);
  CHECK(plan_7b(1, true).total() == block.total());
  CHECK(block.attention_block_bytes == 8192ull * (3584 + 1024) * 2 + 8192ull * 3584 * 2);
  CHECK(block.activations_kept == 28 * (block.layer_input_bytes + block.attention_output_bytes +
                                        block.attention_block_bytes));
  CHECK(block.recomputed_layer == block.layer_activation_bytes - block.attention_output_bytes -
                                      block.attention_block_bytes);
  CHECK(block.total() == m.total() + 27 * block.attention_block_bytes);
  CHECK_THAT(block.describe(), Catch::Contains("activations kept (layer inputs, attention blocks)"));
  CHECK_NOTHROW(block.check_fits(kH100FreeBytes, 2 * kGiB));
  // Under the anchor's 37.0 GB (34.5 GiB) with recompute on one GPU: 26.6 GiB planned (26.7
  // measured on one H100, the CUDA context included).
  CHECK(block.total() < 28 * kGiB);
  CHECK_THAT(lean.describe(), Catch::Contains("activations kept (layer inputs)") &&
                                  !Catch::Contains("attention outputs"));
  // LoRA: 40,370,176 parameters x (2 bf16 + 4 master + 4 gradient + 8 for m and v) bytes.
  CHECK(m.lora_weights_bf16 + m.lora_master_fp32 + m.lora_grads_fp32 + m.adam_moments_fp32 == 40'370'176ull * 18);
  // One GPU without offload holds the whole base: nothing to gather (gpu/fsdp_weights.h).
  CHECK(m.layer_gather == 0);
  CHECK(m.vocab_gather == 0);
  // From two GPUs on: the layer computing and one ahead, and the embedding or head.
  const MemoryPlan two = plan_7b(2, true);
  CHECK(two.layer_gather == 2 * 2 * 233'057'792ull);
  CHECK(two.vocab_gather == 2 * 152'064ull * 3584);
  CHECK(m.logits_workspace == 1024ull * 152'064 * 6);  // fp32 logits + bf16 gradient for 1024 tokens
  CHECK(m.cublaslt_workspace == 32ull << 20);
  CHECK(m.nccl_allowance == kGiB);
  CHECK(m.base_shards_host_pinned == 0);
  // Well under 80 GB: 23.2 GiB as planned today; the bound leaves room for honest growth only.
  CHECK(m.total() > m.base_shards_gpu + 5 * kGiB);
  CHECK(m.total() < 24 * kGiB);
  // The attention backward's dS tiles (variant 4, the default): the causal half of
  // (2, 28, 4096, 4096) bf16, 64 x 64 tiles, and its row sums (2, 28, 4096) fp32.
  CHECK(m.working_buffers >= 2ull * 28 * (64 * 65 / 2) * 64 * 64 * 2 + 2ull * 28 * 4096 * 4);
  CHECK_NOTHROW(m.check_fits(kH100FreeBytes, 2 * kGiB));
}

TEST_CASE("without recompute, only what backward needs is kept: still fits one H100", "[fsdp][memory]") {
  const MemoryPlan m = plan_7b(1, false);
  // Per layer, N = 8192 tokens: input, normed input, attention output and residual (N x 3584 each),
  // q, k, v (N x (3584 + 2 x 512)), gate and up (N x 18944 each), all bf16; two 1/rms (N) and the
  // log-sum-exp (2 x 28 x 4096) fp32; four A-products (N x 64) bf16.
  const std::uint64_t N = 8192;
  const std::uint64_t per_layer = 4 * N * 3584 * 2 + N * 4608 * 2 + 2 * N * 18944 * 2 + 2 * N * 4 +
                                  2ull * 28 * 4096 * 4 + 4 * N * 64 * 2;
  CHECK(per_layer == 936'312'832);
  CHECK(m.layer_activation_bytes == per_layer);
  CHECK(m.activations_kept == 28 * per_layer);
  CHECK(m.recomputed_layer == 0);
  CHECK(m.total() < 75'000'000'000ull);  // within ~75 GB
  CHECK(m.total() > plan_7b_keeping(RecomputeKeep::input).total() + 20 * kGiB);
  CHECK_NOTHROW(m.check_fits(kH100FreeBytes, 2 * kGiB));

  // LoRA on all seven projections also keeps the normed MLP input and SwiGLU's output per layer.
  const MemoryPlan all = plan_7b(1, false, false, "all");
  CHECK(all.layer_activation_bytes == per_layer + N * 3584 * 2 + N * 18944 * 2 + 3 * N * 64 * 2);
  CHECK(all.total() < 75'000'000'000ull);
  CHECK(all.lora_master_fp32 == 161'480'704ull * 4);
}

TEST_CASE("per GPU: base / N plus a part that does not depend on N", "[fsdp][memory]") {
  const MemoryPlan one = plan_7b(1, true);
  const std::uint64_t base_bytes = 2 * base_parameter_count(qwen2_7b);
  const std::uint64_t fixed = one.total() - one.base_shards_gpu;
  const MemoryPlan two = plan_7b(2, true);
  const std::uint64_t gathers = two.layer_gather + two.vocab_gather;  // 1.88 GiB; none on one GPU
  CHECK(one.layer_gather + one.vocab_gather == 0);
  std::uint64_t previous = one.total();
  for (int world = 1; world <= 8; ++world) {
    const MemoryPlan m = plan_7b(world, true);
    INFO("world " << world);
    // This rank's share, at least base / N, more only by padding: 64 elements per rank per layer,
    // 8 rows per rank of the embedding and head, the replicated final norm.
    CHECK(m.base_shards_gpu * world >= base_bytes);
    CHECK(m.base_shards_gpu * world - base_bytes <= std::uint64_t(world) * (28 * 64 * 2 + 2 * 8 * 3584 * 2 + 3584 * 2));
    // The rest is the same at every N but for the gather buffers, which N > 1 adds (the same
    // at every N but for their padding, under 1 MiB).
    const std::uint64_t rest = m.total() - m.base_shards_gpu;
    const std::uint64_t rest_fixed = world == 1 ? fixed : fixed + gathers;
    CHECK(rest >= rest_fixed);
    CHECK(rest - rest_fixed < (1u << 20));
    CHECK(m.total() <= previous);
    previous = m.total();
  }
  // 8 GPUs: 1.77 GiB of base each.
  CHECK(plan_7b(8, true).base_shards_gpu == (28 * 29'132'224ull + 2 * 19'008ull * 3584 + 3584) * 2);
}

TEST_CASE("offload: the shards go to pinned host memory; on the GPU only the gather buffers", "[fsdp][memory]") {
  for (int world : {1, 8}) {
    const ShardPlan shards = make_shard_plan(qwen2_7b, world);
    const MemoryPlan on_gpu = plan_7b(world, true);
    const MemoryPlan off = plan_7b(world, true, true);
    INFO("world " << world);
    CHECK(off.base_shards_gpu == 3584 * 2);  // only the final norm stays
    CHECK(off.base_shards_host_pinned == shards.rank_base_bytes() - 3584 * 2);
    // Each shard is copied into its own slot of the gather buffer and gathered in place. One GPU
    // gathers only because of the offload: its gather buffers are the difference.
    const std::uint64_t added = world == 1 ? off.layer_gather + off.vocab_gather : 0;
    CHECK(added == (world == 1 ? 2 * shards.layer_gather_bytes() + shards.vocab_gather_bytes() : 0));
    CHECK(off.total() == on_gpu.total() - off.base_shards_host_pinned + added);
    CHECK(off.describe().find("pinned host memory") != std::string::npos);
  }
  // The gather buffers grow with the layers fetched ahead, offload or not.
  const MemoryPlan ahead3 = plan_7b(8, true, true, "qkvo", 2, 3);
  const ShardPlan eight = make_shard_plan(qwen2_7b, 8);
  CHECK(ahead3.layer_gather == 4 * eight.layer_gather_bytes());
}

TEST_CASE("activations scale with the micro-batch", "[fsdp][memory]") {
  for (bool recompute : {true, false}) {
    const MemoryPlan two = plan_7b(1, recompute, false, "qkvo", 2);
    const MemoryPlan four = plan_7b(1, recompute, false, "qkvo", 4);
    CHECK(four.activations_kept == 2 * two.activations_kept);
    CHECK(four.working_buffers == 2 * two.working_buffers);
    CHECK(four.base_shards_gpu == two.base_shards_gpu);
    // The logits chunk is 1024 tokens whatever the batch.
    CHECK(four.logits_workspace == two.logits_workspace);
  }
  // Fewer tokens than a chunk: the chunk is the batch.
  const MemoryPlan small = plan_memory(qwen_tiny, LoraConfig{}, make_shard_plan(qwen_tiny, 2), 2, 64, false, false, 1);
  CHECK(small.logits_workspace == 128ull * 13 * 6);
}

TEST_CASE("describe lists every non-zero figure in GiB and the total", "[fsdp][memory]") {
  const std::string text = plan_7b(1, true).describe();
  CHECK_THAT(text, Catch::Contains("base shards") && Catch::Contains("14.19 GiB") && Catch::Contains("total") &&
                       Catch::Contains("activations kept (layer inputs, attention blocks)") &&
                       Catch::Contains("recomputed layer") &&
                       Catch::Contains("NCCL allowance") && Catch::Contains("recompute on"));
  CHECK_THAT(text, !Catch::Contains("pinned host"));
  // Each item is counted once in the total.
  std::uint64_t sum = 0;
  for (const MemoryItem& item : plan_7b(1, true).gpu_items()) sum += item.bytes;
  CHECK(sum == plan_7b(1, true).total());
}

TEST_CASE("a plan that does not fit is refused naming its figures and the ways out", "[fsdp][memory]") {
  const MemoryPlan m = plan_7b(1, false);  // 43.7 GiB (43.96 measured on one H100)
  // Exactly enough passes; a byte less does not.
  CHECK_NOTHROW(m.check_fits(m.total() + kGiB, kGiB));
  CHECK_THROWS_AS(m.check_fits(m.total() + kGiB - 1, kGiB), InputError);
  // A 40 GiB GPU.
  const std::uint64_t free_bytes = 40 * kGiB;
  CHECK_THROWS_WITH(m.check_fits(free_bytes, 2 * kGiB),
                    Catch::Contains("43.72 GiB") &&                       // the total
                        Catch::Contains("45.72 GiB") &&                   // with the headroom
                        Catch::Contains("40.00 GiB free") &&
                        Catch::Contains(std::to_string(free_bytes)) &&    // and in bytes
                        Catch::Contains("activations kept for backward 24.42 GiB") &&  // the biggest items
                        Catch::Contains("base shards 14.19 GiB") &&
                        Catch::Contains("fsdp_lora.recompute: true") && Catch::Contains("fsdp_lora.offload: cpu") &&
                        Catch::Contains("more GPUs"));
  // The recompute's saving is the recompute plan's own figures (the default recompute_keep,
  // attention_block): 28 x (input + attention output + q, k, v, residual) kept, one layer's set
  // less those rebuilt.
  CHECK_THROWS_WITH(m.check_fits(free_bytes, 2 * kGiB),
                    Catch::Contains("recompute_keep attention_block says of each layer: 7.28 GiB instead of 24.42 GiB"));
  // What is already in force is not suggested again.
  const MemoryPlan lean = plan_7b(1, true, true);
  CHECK_THROWS_WITH(lean.check_fits(4 * kGiB, 0),
                    !Catch::Contains("fsdp_lora.recompute: true") && !Catch::Contains("fsdp_lora.offload: cpu") &&
                        Catch::Contains("fsdp_lora.recompute_keep: input") && Catch::Contains("more GPUs") &&
                        Catch::Contains("micro_batch"));
}

TEST_CASE("bad arguments are refused", "[fsdp][memory]") {
  const ShardPlan shards = make_shard_plan(qwen2_7b, 2);
  CHECK_THROWS_AS(plan_memory(qwen2_7b, LoraConfig{}, shards, 0, 4096, true, false, 1), std::invalid_argument);
  CHECK_THROWS_AS(plan_memory(qwen2_7b, LoraConfig{}, shards, 2, 4096, true, false, 0), std::invalid_argument);
  CHECK_THROWS_WITH(plan_memory(qwen2_0_5b, LoraConfig{}, shards, 2, 4096, true, false, 1), Catch::Contains("another model"));
}

TEST_CASE("reduce_scatter keeps AdamW moments for this rank's slice only", "[fsdp][memory]") {
  const LoraConfig all = lora_on("all");  // 161M parameters: 1.29 GB of moments whole
  const std::uint64_t P = lora_parameter_count(qwen2_7b, all);
  for (const int world : {1, 2, 4, 8}) {
    const ShardPlan shards = make_shard_plan(qwen2_7b, world);
    const MemoryPlan whole = plan_memory(qwen2_7b, all, shards, 2, 4096, true, false, 1, false);
    const MemoryPlan sliced = plan_memory(qwen2_7b, all, shards, 2, 4096, true, false, 1, true);
    CHECK(whole.adam_moments_fp32 == 2 * P * 4);
    if (world == 1) {
      // One rank: nothing to slice.
      CHECK_FALSE(sliced.shard_optimizer);
      CHECK(sliced.adam_moments_fp32 == whole.adam_moments_fp32);
      continue;
    }
    CHECK(sliced.shard_optimizer);
    const std::uint64_t stride = lora_slice_stride(P, world, kLoraSliceAlign);
    CHECK(sliced.adam_moments_fp32 == 2 * stride * 4);
    CHECK(stride * static_cast<std::uint64_t>(world) >= P);
    CHECK(stride * static_cast<std::uint64_t>(world) < P + static_cast<std::uint64_t>(world) * kLoraSliceAlign);
    // Everything else the same; the total smaller by the moments the rank does not keep.
    CHECK(whole.total() - sliced.total() == whole.adam_moments_fp32 - sliced.adam_moments_fp32);
    CHECK(sliced.describe().find("this rank's slice") != std::string::npos);
  }
}
