#include "train/learning_check.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace gpuaccept::train {

double LearningSchedule::lr_at(int t) const {
  return lr * (warmup > 0 ? std::min(1.0, static_cast<double>(t) / warmup) : 1.0);
}

double schedule_lr_sum(const LearningSchedule& s, int steps) {
  double sum = 0;
  for (int t = 1; t < steps; ++t) sum += s.lr_at(t);
  return sum;
}

namespace {

// A sum reaches a target also when it is that target summed in another order.
bool reaches(double sum, double target) { return sum >= target * (1 - 1e-9); }

}  // namespace

int steps_for_lr_sum(const LearningSchedule& s, double lr_sum) {
  if (!(s.lr > 0)) return 0;  // no schedule reaches it
  int steps = kLearningMinSteps;
  double sum = schedule_lr_sum(s, steps);
  while (!reaches(sum, lr_sum)) sum += s.lr_at(steps++);
  return steps;
}

double falling_trend_z(std::span<const double> losses) {
  const auto n = static_cast<double>(losses.size());
  if (losses.size() < 2) return 0;
  long long s = 0;  // the pairs that fall less those that rise
  for (std::size_t i = 0; i < losses.size(); ++i)
    for (std::size_t j = i + 1; j < losses.size(); ++j) s += (losses[j] < losses[i]) - (losses[j] > losses[i]);
  const double sd = std::sqrt(n * (n - 1) * (2 * n + 5) / 18);
  if (s > 1) return static_cast<double>(s - 1) / sd;   // continuity-corrected
  if (s < -1) return static_cast<double>(s + 1) / sd;
  return 0;
}

namespace {

std::string schedule_words(const LearningSchedule& s, int steps, double lr_sum) {
  return fmt::format("{} steps at lr {:.3g} with {} warm-up step{}: a learning-rate sum of {:.3g} over the {} updates the "
                     "losses show",
                     steps, s.lr, s.warmup, s.warmup == 1 ? "" : "s", lr_sum, std::max(steps - 1, 0));
}

std::string curve_words(const LearningJudgement& j, std::optional<double> floor) {
  if (j.steps < 2) return fmt::format("{} finite step{}", j.steps, j.steps == 1 ? "" : "s");
  std::string out = fmt::format("loss {:.4f} at step 1, {:.4f} over the last {} of {} steps; its trend z = {:.2f} "
                                "(falling beyond chance from {}: a loss that does not fall gets there once in 1,000 runs)",
                                j.first, j.last, j.last_k, j.steps, j.trend_z, kTrendZ);
  if (floor && j.first > *floor)
    out += fmt::format("; {:.1f}% of the way from step 1 down to the data's entropy floor {:.4f}",
                       100.0 * (j.first - j.last) / (j.first - *floor), *floor);
  return out;
}

}  // namespace

LearningJudgement judge_learning(std::span<const double> losses, int planned_steps, const LearningSchedule& schedule,
                                 const LearningBasis& basis, std::optional<double> floor) {
  LearningJudgement j;
  j.steps = static_cast<int>(losses.size());
  j.lr_sum = schedule_lr_sum(schedule, j.steps);
  if (j.steps >= 2) {
    j.first = losses.front();
    j.last_k = std::clamp(j.steps / 4, 1, 5);
    j.last = std::accumulate(losses.end() - j.last_k, losses.end(), 0.0) / j.last_k;
    j.trend_z = falling_trend_z(losses);
  }
  const bool planned_can_judge =
      planned_steps >= kLearningMinSteps && reaches(schedule_lr_sum(schedule, planned_steps), basis.min_lr_sum);
  const bool can_judge = j.steps >= kLearningMinSteps && reaches(j.lr_sum, basis.min_lr_sum);
  const std::string curve = curve_words(j, floor);
  const std::string planned = schedule_words(schedule, j.steps, j.lr_sum);
  const std::string basis_words = fmt::format("{:.3g}, where a healthy GPU's loss was seen falling far beyond chance ({})",
                                              basis.min_lr_sum, basis.seen);

  if (j.steps >= kLearningMinSteps && j.trend_z >= kTrendZ) {
    j.status = Status::Pass;
    j.message = fmt::format("{}; {}", curve, planned);
  } else if (can_judge) {
    j.status = Status::Fail;
    j.message = fmt::format("the model did not learn: {}; {}, at least {}", curve, planned, basis_words);
  } else if (planned_can_judge && j.steps < planned_steps) {
    j.status = Status::Fail;
    j.message = fmt::format("the loss was finite for {} of the {} planned steps (the finite check says where), too few to "
                            "show learning: {}",
                            j.steps, planned_steps, curve);
  } else {
    j.status = Status::Skip;
    j.steps_needed = steps_for_lr_sum(schedule, basis.min_lr_sum);
    j.message = fmt::format("too short to judge: {}; needs {} steps or more and a learning-rate sum of {}; {}; the "
                            "smallest run that would judge it: {} steps at this lr and warm-up",
                            planned, kLearningMinSteps, basis_words, curve, j.steps_needed);
  }
  return j;
}

Record learning_record(const LearningJudgement& j, const LearningSchedule& schedule, const LearningBasis& basis) {
  Record r = job_record("learning");
  r.metric = "final_loss";
  r.value = j.last;
  r.unit = "nats";
  r.status = j.status;
  r.message = j.message;
  r.params = {{"steps", std::to_string(j.steps)},
              {"trend_z", fmt::format("{:.2f}", j.trend_z)},
              {"min_trend_z", fmt::format("{}", kTrendZ)},
              {"lr", fmt::format("{:.3g}", schedule.lr)},
              {"lr_warmup", std::to_string(schedule.warmup)},
              {"lr_sum", fmt::format("{:.3g}", j.lr_sum)},
              {"min_lr_sum", fmt::format("{:.3g}", basis.min_lr_sum)}};
  if (j.steps_needed > 0) r.params["steps_needed"] = std::to_string(j.steps_needed);
  return r;
}

}  // namespace gpuaccept::train
