#include "train/arrival_progress.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace gpuaccept::train {

namespace {
constexpr std::array<std::string_view, 5> kRunOrder{"all", "resume", "equivalence", "single_gpu", "node"};
constexpr long long kStepsPerRun = 1'000'000;
}  // namespace

long long arrival_progress(const std::string& run_label, int step) {
  const auto it = std::find(kRunOrder.begin(), kRunOrder.end(), run_label);
  if (it == kRunOrder.end()) throw std::logic_error("arrival_progress: unknown run " + run_label);
  return (it - kRunOrder.begin() + 1) * kStepsPerRun + step;
}

std::string describe_arrival_progress(long long progress) {
  const long long run = progress / kStepsPerRun;
  if (run < 1 || run > static_cast<long long>(kRunOrder.size())) return "set-up, before the first step";
  return fmt::format("step {} of run '{}'", progress % kStepsPerRun, kRunOrder[static_cast<std::size_t>(run - 1)]);
}

}  // namespace gpuaccept::train
