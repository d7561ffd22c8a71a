// The arithmetic of the fsdp-lora phase's equivalence check, free of CUDA so the unit tests
// (tests/unit/fsdp_lora) check it: which data shards each micro-batch reads, the loss curves
// compared step by step, and the relative L2 distance between two flat LoRA vectors.
//
// The check: N ranks train with the base sharded (the all-GPU run), each on its own micro-batches
// (data shards rank x accum .. + accum - 1), gradients all-reduced to their mean; then rank 0 alone,
// with the whole base on its GPU (no gathers), replays every rank's micro-batches as gradient
// accumulation (N x accum micro-batches, each scaled 1/(N x accum)). Same LoRA initialisation,
// same data, same dropout masks (keyed by the micro-batch's place within its rank's step, not by
// the rank): the loss per step, step 1's LoRA gradients (both sides from the same weights) and
// the LoRA weights after the last step must agree within bf16 tolerances.
#pragma once

#include <span>
#include <vector>

namespace gpuaccept::fsdp {

// The LoRA weights after the last compared step, relative L2 error (||a - b|| / ||b||). The two
// sides differ by more than the order of the fp32 sums: each process chose its own matmul
// algorithms (bf16 results that differ in the last bit), and from step 2 on each starts from
// weights that already differ by that; AdamW's first steps move every weight by about lr
// whatever its gradient's size, so a tiny gradient whose sign differs moves a weight the other
// way. Measured (one H100, 2 ranks, Qwen2-7B's shape, 2 steps, lr 1e-3): 2.0e-3 with 4 layers,
// 7.5e-3 with 28. A sharding fault (a wrong shard, a missing gather) makes the loss and step 1's
// gradients differ at once; this bound only has to leave room for that drift.
inline constexpr double kEquivalenceWeightTolerance = 2e-2;

// The data shards `rank` reads in one optimizer step: one per micro-batch, distinct across ranks.
std::vector<int> rank_shards(int rank, int accum);
// Every rank's shards in rank order: what one GPU replays to stand for `ranks` ranks.
std::vector<int> replay_shards(int ranks, int accum);
// The dropout key's micro-batch index for a shard: its place within its rank's step (rank r's
// micro-batch m uses m, so the replay draws the masks the rank drew).
inline int dropout_micro(int shard, int accum) { return shard % accum; }

struct LossComparison {
  int compared = 0;     // steps present in both curves
  int worst_step = 0;   // 1-based; 0 when nothing was compared
  double worst = 0;     // largest |a - b|; +inf when a loss is not finite
};
// a[i], b[i]: the loss of step i + 1. Steps present in only one curve are not compared (the
// caller checks `compared` against the steps it expected).
LossComparison compare_losses(std::span<const double> a, std::span<const double> b);

// ||a - b||_2 / ||b||_2 in double; 0 when both are zero, +inf when only b is zero or a value is
// not finite; throws std::invalid_argument when the sizes differ.
double relative_l2(std::span<const float> a, std::span<const float> b);
// ||(a - base) - (b - base)|| / ||b - base||: the same, of the updates since `base`.
double relative_l2_of_updates(std::span<const float> a, std::span<const float> b, std::span<const float> base);

}  // namespace gpuaccept::fsdp
