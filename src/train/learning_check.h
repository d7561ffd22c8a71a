// The learning check both training phases (ddp, fsdp-lora) run on the all-GPU run's loss curve
// (the mean over ranks, per step): did the loss fall, beyond chance, over a schedule long enough
// to show it? A share of the gap to the data's floor, the bound before, failed healthy GPUs on
// shorter runs (issue 39: fsdp-lora at 20 layers, 12 steps at lr 2e-4 fell 12.65 -> 11.32
// against a bound of 9.75), so the bound now comes from the trend of the loss and the schedule:
//
//  - the trend: the Mann-Kendall statistic, the pairs of steps whose later loss is lower less
//    those whose later loss is higher. A model that does not learn (no update reaches the
//    weights) sees only each step's own batch: its losses are independent draws of one
//    distribution, whatever their noise, and reach z >= kTrendZ once in 1,000 runs (one-sided
//    p = 1e-3; from kLearningMinSteps steps on the normal approximation stays below that,
//    tests/unit/train). Pairs, not sizes, so a healthy run's loss spike (ddp's default schedule
//    jumps 9.30 -> 11.95 at step 7) costs a few pairs, not the verdict;
//  - PASS when the loss falls with z >= kTrendZ over at least kLearningMinSteps steps;
//  - FAIL when it does not over a schedule whose learning-rate sum reaches the phase's
//    LearningBasis::min_lr_sum (where a healthy GPU's trend was seen far beyond chance): that
//    model cannot learn. So too when the loss stopped being finite before a planned run that
//    long had shown anything;
//  - SKIP otherwise (fewer steps, or a smaller sum), with the reason and the smallest run that
//    would judge: never FAIL for a run too short to show learning.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "results/record.h"

namespace gpuaccept::train {

inline constexpr int kLearningMinSteps = 8;  // 7 steps in falling order give z = 2.7 at most
inline constexpr double kTrendZ = 3.09;       // one-sided p = 1e-3 under "the loss does not fall"

// The configured schedule: a linear warm-up to `lr` over `warmup` steps, as the optimizer steps
// (ClippedAdamW::warmed_up is lr_at).
struct LearningSchedule {
  double lr = 0;
  int warmup = 0;

  double lr_at(int t) const;  // at step t (from 1); warmup 0: lr from the first step
};

// What a phase knows of its own model and data: the learning-rate sum from which a healthy GPU's
// loss falls far beyond its noise, and the measurement that says so (quoted in every message).
struct LearningBasis {
  double min_lr_sum = 0;
  std::string seen;
};

// The sum of the learning rates of updates 1..steps-1: those that act between step 1's loss
// and step `steps`'s.
double schedule_lr_sum(const LearningSchedule& s, int steps);
// The fewest steps (at least kLearningMinSteps) whose schedule_lr_sum reaches `lr_sum`.
int steps_for_lr_sum(const LearningSchedule& s, double lr_sum);

// The Mann-Kendall z of a falling trend: (-S - 1) / sd(S) for S < -1, else 0 (S: the pairs
// i < j with losses[j] < losses[i] less those with losses[j] > losses[i]; sd(S)^2 =
// n (n - 1) (2n + 5) / 18, the variance without ties: ties only make it smaller). Negative
// for a rising trend, by the same formula.
double falling_trend_z(std::span<const double> losses);

struct LearningJudgement {
  Status status = Status::Skip;
  int steps = 0;         // finite steps judged
  int last_k = 0;        // steps averaged at the end, for the figures
  double first = NAN;    // step 1's loss (nats)
  double last = NAN;     // the mean of the last k
  double trend_z = NAN;  // falling_trend_z over the steps judged
  double lr_sum = 0;     // schedule_lr_sum over the steps judged
  int steps_needed = 0;  // SKIP: the smallest run that would judge (0 when judged)
  std::string message;
};

// `losses`: the finite steps of the run (the mean over ranks), step 1 first; `planned_steps`:
// the run's configured length; `floor`: the data's entropy floor when known (said in words only).
LearningJudgement judge_learning(std::span<const double> losses, int planned_steps, const LearningSchedule& schedule,
                                 const LearningBasis& basis, std::optional<double> floor);

// A hidden fault for tests/gpu/learning_grid.sh (--debug-lr-scale): the optimizer steps with
// this multiple of the configured learning rate while the learning check judges the configured
// schedule. 0: a model that cannot learn (no update reaches the weights, as with a zeroed
// gradient or learning rate); -1: one whose loss climbs (a gradient of the wrong sign).
struct LearningFault {
  double lr_scale = 1.0;
};

// The job-level `learning` record (metric final_loss): the check is about every GPU's run
// together, so it names no node (results/record.h).
Record learning_record(const LearningJudgement& j, const LearningSchedule& schedule, const LearningBasis& basis);

}  // namespace gpuaccept::train
