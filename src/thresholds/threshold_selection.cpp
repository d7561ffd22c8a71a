#include "thresholds/threshold_selection.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/error.h"
#include "thresholds/threshold_set.h"

namespace gpuaccept {
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> threshold_files(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw InputError(fmt::format("thresholds directory {}: does not exist", dir.string()));
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

ThresholdChoice fallback(const fs::path& dir, std::string why) {
  const fs::path generic = dir / kGenericThresholdFile;
  if (!fs::exists(generic))
    throw InputError(fmt::format("thresholds directory {}: {} and there is no {} to fall back to", dir.string(), why,
                                 kGenericThresholdFile));
  return {generic, "", fmt::format("{}: using {} (model-independent rules only)", why, kGenericThresholdFile)};
}

}  // namespace

ThresholdChoice select_threshold_file(const std::vector<std::string>& gpu_names, const fs::path& dir) {
  std::map<std::string, int> count;
  for (const auto& n : gpu_names) ++count[n];
  const auto files = threshold_files(dir);
  if (count.empty()) return fallback(dir, "no GPU found in discover's inventory");

  // A mixed fleet already fails discover's nodes_alike check; judge it by its most common model.
  const auto common = std::max_element(count.begin(), count.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
  const std::string& model = common->first;
  std::string models_found = fmt::format("GPU model '{}' ({} GPUs)", model, common->second);
  if (count.size() > 1) models_found += fmt::format(", the most common of {} models", count.size());

  for (const auto& f : files) {
    if (f.filename() == kGenericThresholdFile) continue;
    if (ThresholdSet::load(f).applies_to_model(model))
      return {f, model, fmt::format("{} matches {}", models_found, f.filename().string())};
  }
  return fallback(dir, fmt::format("{} has no thresholds file in {}", models_found, dir.string()));
}

}  // namespace gpuaccept
