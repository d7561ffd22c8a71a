#include "nccl-scaling/scale_budget.h"

#include <fmt/format.h>

#include "common/progress.h"

namespace gpuaccept::nccl_scaling {

namespace {

// Operations a size runs: warm-up, the timed batches, and the verifying one.
int operations(const IterPlan& p) { return p.warmup + p.iters * p.batches + 1; }

}  // namespace

ScaleBudget::ScaleBudget(double budget_s, int sweeps, std::size_t judged_bytes)
    : budget_s_(budget_s), sweeps_left_(sweeps > 0 ? sweeps : 1), judged_bytes_(judged_bytes) {}

void ScaleBudget::begin_sweep() {
  share_s_ = budget_s_ > 0 ? (budget_s_ - spent_s_) / sweeps_left_ : 0;
  if (sweeps_left_ > 1) --sweeps_left_;
  sweep_spent_s_ = 0;
  last_bytes_ = 0;
  last_us_ = 0;
  cut_ = false;
  judged_done_ = false;
  cut_reason_.clear();
}

double ScaleBudget::estimate_s(std::size_t bytes, const IterPlan& plan, int placements) const {
  if (last_bytes_ == 0 || last_us_ <= 0) return 0;  // nothing measured yet: no basis, run it
  const double per_op_s = last_us_ * 1e-6 * static_cast<double>(bytes) / static_cast<double>(last_bytes_);
  return per_op_s * operations(plan) * placements;
}

ScaleBudget::Decision ScaleBudget::before(std::size_t bytes, const IterPlan& normal, int placements) {
  Decision d;
  d.plan = normal;
  if (budget_s_ <= 0) return d;
  const double estimate = estimate_s(bytes, normal, placements);
  if (!cut_ && sweep_spent_s_ + estimate <= share_s_) return d;
  if (!cut_) {
    cut_ = true;
    const double rate = last_us_ > 0 ? static_cast<double>(last_bytes_) / (last_us_ * 1e-6) / 1e9 : 0;
    cut_reason_ = fmt::format("left out by the scale's time budget: at {:.3g} GB/s (algbw measured at {}), {} and larger "
                              "would take {:.0f} s or more, beyond this sweep's {:.0f} s of the scale's {:.0f} s "
                              "(nccl.scale_budget_s)",
                              rate, format_bytes(static_cast<double>(last_bytes_)), format_bytes(static_cast<double>(bytes)),
                              estimate, share_s_ - sweep_spent_s_ > 0 ? share_s_ - sweep_spent_s_ : 0.0, budget_s_);
  }
  d.reason = cut_reason_;
  if (!judged_done_ && bytes >= judged_bytes_) {
    const IterPlan reduced{1, 1, 1};
    if (spent_s_ + estimate_s(bytes, reduced, placements) <= budget_s_) {
      d.kind = Decision::Kind::MeasureReduced;
      d.plan = reduced;
      d.reason = "measured with one warm-up and one timed operation: " + cut_reason_;
      return d;
    }
  }
  d.kind = Decision::Kind::Skip;
  return d;
}

void ScaleBudget::after(std::size_t bytes, const IterPlan& plan, int placements, double time_us) {
  const double s = time_us * 1e-6 * operations(plan) * placements;
  spent_s_ += s;
  sweep_spent_s_ += s;
  if (bytes >= judged_bytes_) judged_done_ = true;
  if (time_us > 0) {
    last_bytes_ = bytes;
    last_us_ = time_us;
  }
}

}  // namespace gpuaccept::nccl_scaling
