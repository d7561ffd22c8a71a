// The training phases' learning check (train/learning_check.h) on measured loss curves and on
// curves of a model that cannot learn: a run too short to judge SKIPs, a healthy one PASSes
// (its loss spike included), one whose loss does not fall FAILs.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "train/learning_check.h"

using namespace gpuaccept;
using namespace gpuaccept::train;

namespace {

// ddp's default schedule (lr 6e-4, 10 warm-up steps) on one H100: the quick profile's all-GPU
// run, docs/examples/h100-quick/summary.json, 2026-11. Note the spike at step 7.
const std::vector<double> kDdpCurve = {
    10.9633, 10.3326, 10.0169, 9.977,  9.7115, 9.2968, 11.948, 8.6367, 7.6654, 8.2207, 7.8733, 7.1408,
    6.5866,  7.8465,  6.3415,  5.8466, 5.7356, 5.7631, 5.3598, 5.3366, 5.4399, 5.196,  5.4648, 5.33,
    4.8228,  4.6592,  4.5049,  4.4984, 4.2107, 4.2976, 4.0238, 3.8975, 3.708,  3.5226, 3.4319, 3.2222,
    3.144,   2.9283,  2.8072,  2.6265, 2.4344, 2.2909, 2.2157, 2.0595, 1.9605, 1.8399, 1.8048, 1.6917,
    1.6246,  1.5506,  1.5025,  1.4642, 1.4482, 1.4332, 1.388,  1.3698, 1.3339, 1.3312, 1.3157, 1.2989};
const LearningSchedule kDdpDefault{6e-4, 10};
const LearningBasis kDdp{5.7e-3, "ddp basis"};

// fsdp-lora, the quick profile (4 layers, lr 1e-3, 2 warm-up steps) on one H100, the same run.
const std::vector<double> kFsdpQuickCurve = {12.6179, 12.5665, 11.9676, 10.8466, 9.654,
                                             9.3431,  9.0995,  8.9992,  9.0352,  8.9573};
const LearningBasis kFsdp{1.8e-3, "fsdp basis"};

std::span<const double> first(const std::vector<double>& v, std::size_t n) { return std::span(v).first(n); }

// A model that cannot learn: every step's loss an independent draw around the start.
std::vector<double> flat(std::mt19937_64& rng, int steps, double sd = 0.013) {
  std::normal_distribution<double> noise(0, sd);
  std::vector<double> out;
  for (int i = 0; i < steps; ++i) out.push_back(12.65 + noise(rng));
  return out;
}

}  // namespace

TEST_CASE("learning: the schedule's learning-rate sum and the run that reaches it", "[train][learning]") {
  const LearningSchedule s{2e-4, 5};
  CHECK(s.lr_at(1) == Approx(4e-5));
  CHECK(s.lr_at(5) == Approx(2e-4));
  CHECK(s.lr_at(9) == Approx(2e-4));
  CHECK(LearningSchedule{1e-3, 0}.lr_at(1) == Approx(1e-3));
  // Updates 1..11 act between step 1's loss and step 12's: (0.4+0.8+1.2+1.6+2.0) + 6 x 2.0 (x 1e-4).
  CHECK(schedule_lr_sum(s, 12) == Approx(1.8e-3));
  CHECK(schedule_lr_sum(s, 1) == 0);
  CHECK(steps_for_lr_sum(s, 1.8e-3) == 12);
  CHECK(steps_for_lr_sum(s, 1e-9) == kLearningMinSteps);  // never fewer than the trend needs
  CHECK(steps_for_lr_sum(kDdpDefault, 5.7e-3) == 15);
}

TEST_CASE("learning: the trend counts pairs, so a spike costs pairs, not the verdict", "[train][learning]") {
  const std::vector<double> falling = {8, 7, 6, 5, 4, 3, 2, 1};
  CHECK(falling_trend_z(falling) == Approx(27 / std::sqrt(8.0 * 7 * 21 / 18)));  // 3.34
  const std::vector<double> rising(falling.rbegin(), falling.rend());
  CHECK(falling_trend_z(rising) == Approx(-falling_trend_z(falling)));
  CHECK(falling_trend_z(std::vector<double>(10, 3.0)) == 0);
  CHECK(falling_trend_z(first(kDdpCurve, 11)) < kTrendZ);   // the spike at step 7 still weighs
  CHECK(falling_trend_z(first(kDdpCurve, 12)) > kTrendZ);   // 3.36
  CHECK(falling_trend_z(first(kDdpCurve, 15)) == Approx(4.06).margin(0.01));
}

TEST_CASE("learning: measured healthy curves PASS, and no prefix of them FAILs", "[train][learning]") {
  const LearningJudgement ddp = judge_learning(kDdpCurve, 60, kDdpDefault, kDdp, 1.0765);
  CHECK(ddp.status == Status::Pass);
  CHECK(ddp.first == Approx(10.9633));
  CHECK(ddp.last == Approx((1.3698 + 1.3339 + 1.3312 + 1.3157 + 1.2989) / 5));
  CHECK_THAT(ddp.message, Catch::Contains("entropy floor 1.0765") && Catch::Contains("60 steps at lr 0.0006"));
  const LearningJudgement fsdp = judge_learning(kFsdpQuickCurve, 10, {1e-3, 2}, kFsdp, 1.0765);
  CHECK(fsdp.status == Status::Pass);
  // A run of any length on the same hardware: PASS or SKIP, never FAIL (issue 39).
  for (std::size_t n = 1; n <= kDdpCurve.size(); ++n) {
    INFO("ddp, first " << n << " steps");
    const LearningJudgement j = judge_learning(first(kDdpCurve, n), static_cast<int>(n), kDdpDefault, kDdp, 1.0765);
    CHECK(j.status != Status::Fail);
    if (n >= 15) CHECK(j.status == Status::Pass);
  }
  for (std::size_t n = 1; n <= kFsdpQuickCurve.size(); ++n) {
    INFO("fsdp-lora, first " << n << " steps");
    CHECK(judge_learning(first(kFsdpQuickCurve, n), static_cast<int>(n), {1e-3, 2}, kFsdp, 1.0765).status !=
          Status::Fail);
  }
}

TEST_CASE("learning: issue 39's run PASSes; a shorter one SKIPs with the run that would judge", "[train][learning]") {
  // 20 layers, 12 steps at lr 2e-4 with 5 warm-up steps: 12.65 -> 11.32 (the last three steps'
  // mean), each step's loss within 0.01 of a curve that falls faster as the warm-up ends.
  const std::vector<double> issue = {12.650, 12.648, 12.630, 12.580, 12.470, 12.300,
                                     12.100, 11.900, 11.690, 11.480, 11.320, 11.160};
  const LearningSchedule s{2e-4, 5};
  const LearningJudgement j = judge_learning(issue, 12, s, kFsdp, 1.08);
  CHECK(j.status == Status::Pass);
  CHECK(j.last == Approx(11.32));

  const LearningJudgement short_run = judge_learning(first(issue, 6), 6, s, kFsdp, 1.08);
  CHECK(short_run.status == Status::Skip);
  CHECK(short_run.steps_needed == 12);
  CHECK_THAT(short_run.message, Catch::Contains("too short to judge") &&
                                    Catch::Contains("the smallest run that would judge it: 12 steps"));
  // Enough steps but a schedule too gentle to show learning: SKIP too, naming the steps it needs.
  const std::vector<double> gentle(issue.begin(), issue.begin() + 10);
  const LearningJudgement low = judge_learning(std::vector<double>(10, 12.65), 10, {2e-5, 5}, kFsdp, 1.08);
  CHECK(low.status == Status::Skip);
  CHECK(low.steps_needed == steps_for_lr_sum({2e-5, 5}, 1.8e-3));
  CHECK(judge_learning(gentle, 10, {2e-5, 5}, kFsdp, 1.08).status == Status::Pass);  // falling: judged by the trend
}

TEST_CASE("learning: a model that cannot learn FAILs where the schedule should have shown it", "[train][learning]") {
  std::mt19937_64 rng(39);
  const LearningSchedule s{2e-4, 5};  // 30 steps: a learning-rate sum of 5.4e-3, three times the basis
  const LearningJudgement zero = judge_learning(flat(rng, 30), 30, s, kFsdp, 1.08);
  CHECK(zero.status == Status::Fail);
  CHECK_THAT(zero.message, Catch::Contains("the model did not learn") && Catch::Contains("fsdp basis"));
  // Gradient ascent: the loss climbs.
  std::vector<double> rising = flat(rng, 30);
  for (std::size_t i = 0; i < rising.size(); ++i) rising[i] += 0.02 * static_cast<double>(i);
  CHECK(judge_learning(rising, 30, s, kFsdp, 1.08).status == Status::Fail);
  // NaN from step 6 of 30: the finite steps cannot show learning, and the run should have.
  const LearningJudgement stopped = judge_learning(first(kFsdpQuickCurve, 5), 30, s, kFsdp, 1.08);
  CHECK(stopped.status == Status::Fail);
  CHECK_THAT(stopped.message, Catch::Contains("finite for 5 of the 30 planned steps"));
}

TEST_CASE("learning: a flat curve passes once in 1,000 runs or less, whatever its noise", "[train][learning]") {
  std::mt19937_64 rng(2026);
  for (int steps : {8, 12, 30}) {
    int passed = 0;
    const int runs = 20000;
    for (int i = 0; i < runs; ++i)
      passed += judge_learning(flat(rng, steps, i % 2 ? 0.013 : 1.0), steps, {1e-3, 0}, kFsdp, 1.08).status ==
                Status::Pass;
    INFO(steps << " steps: " << passed << " of " << runs << " flat curves passed");
    CHECK(passed <= runs / 1000 + 10);  // the bound plus room for the sampling's own spread
  }
}

TEST_CASE("learning: the record is about the job, naming no node", "[train][learning]") {
  const LearningSchedule s{2e-4, 5};
  const Record r = learning_record(judge_learning(std::vector<double>(6, 12.0), 6, s, kFsdp, 1.08), s, kFsdp);
  CHECK(r.test == "learning");
  CHECK(r.metric == "final_loss");
  CHECK(r.status == Status::Skip);
  CHECK(r.rank == kJobLevel);
  CHECK(r.node.empty());
  CHECK_FALSE(blames_node(r));
  CHECK(r.params.at("steps_needed") == "12");
  CHECK(r.params.at("lr_sum") == "0.0006");
  CHECK(r.params.at("min_lr_sum") == "0.0018");
}
