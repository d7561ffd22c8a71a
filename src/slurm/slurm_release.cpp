#include "slurm/slurm_release.h"

#include <algorithm>
#include <array>
#include <regex>
#include <string>

#include <fmt/format.h>

namespace gpuaccept {

namespace {

// SchedMD's major releases before the 6-month cycle, in order.
constexpr std::array<SlurmRelease, 12> kNineMonthCycle{{{17, 2}, {17, 11}, {18, 8}, {19, 5}, {20, 2}, {20, 11},
                                                         {21, 8}, {22, 5}, {23, 2}, {23, 11}, {24, 5}, {24, 11}}};

// Position in the release sequence: the table above, then two a year (YY.05, YY.11).
std::optional<int> sequence_index(SlurmRelease r) {
  const auto it = std::find(kNineMonthCycle.begin(), kNineMonthCycle.end(), r);
  if (it != kNineMonthCycle.end()) return static_cast<int>(it - kNineMonthCycle.begin());
  if (r.year >= 25 && (r.month == 5 || r.month == 11))
    return static_cast<int>(kNineMonthCycle.size()) + 2 * (r.year - 25) + (r.month == 11 ? 1 : 0);
  return std::nullopt;
}

}  // namespace

std::string SlurmRelease::text() const { return fmt::format("{}.{:02d}", year, month); }

std::optional<SlurmRelease> parse_slurm_release(std::string_view version) {
  static const std::regex re(R"((\d{2})\.(\d{1,2})(?:\.\d+)?)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(version.begin(), version.end(), m, re)) return std::nullopt;
  const SlurmRelease r{std::stoi(m[1].str()), std::stoi(m[2].str())};
  if (r.month < 1 || r.month > 12) return std::nullopt;
  return r;
}

std::optional<int> releases_between(SlurmRelease older, SlurmRelease newer) {
  const auto a = sequence_index(older), b = sequence_index(newer);
  if (!a || !b) return std::nullopt;
  return *b - *a;
}

ClientVerdict judge_slurm_client(SlurmRelease client, SlurmRelease controller) {
  using Kind = ClientVerdict::Kind;
  const auto gap = releases_between(client, controller);
  if (!gap)
    return {Kind::Unknown, fmt::format("libslurm {} and slurmctld {}: a release not in Slurm's release sequence, "
                                       "compatibility not judged",
                                       client.text(), controller.text())};
  // 24.11 widened the window from two previous releases to three.
  const int window = sequence_index(controller) >= sequence_index(SlurmRelease{24, 11}) ? 3 : 2;
  const std::string rebuild = fmt::format(
      "rebuild gpuaccept against the cluster's own Slurm {} (SLURM_ROOT=<its prefix>, README: Build on your cluster)",
      controller.text());
  if (*gap < 0)
    return {Kind::ClientTooNew, fmt::format("libslurm {} is newer than slurmctld {}: Slurm does not support clients "
                                            "newer than the controller; {}",
                                            client.text(), controller.text(), rebuild)};
  if (*gap > window)
    return {Kind::ClientTooOld, fmt::format("libslurm {} is {} releases older than slurmctld {}, which accepts clients "
                                            "of at most {} previous releases; {}",
                                            client.text(), *gap, controller.text(), window, rebuild)};
  return {Kind::Compatible,
          *gap == 0 ? fmt::format("libslurm {} matches slurmctld {}", client.text(), controller.text())
                    : fmt::format("libslurm {} is {} release{} older than slurmctld {}, within its window of {}",
                                  client.text(), *gap, *gap == 1 ? "" : "s", controller.text(), window)};
}

}  // namespace gpuaccept
