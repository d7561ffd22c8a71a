// Which threshold file a run is judged by: the one in the thresholds directory whose
// `models:` lists the GPU model found in discover's inventory, else generic.yaml
// (model-independent rules only). The reason is shown in the report.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gpuaccept {

inline constexpr const char* kGenericThresholdFile = "generic.yaml";

struct ThresholdChoice {
  std::filesystem::path file;
  std::string model;   // the GPU model the file was chosen for; "" for the fallback or --thresholds
  std::string reason;  // one sentence for the report
};

// `gpu_names`: one entry per GPU found (NVML names, e.g. "NVIDIA H200"). Reads every
// *.yaml in `dir`, so a malformed one is reported (InputError) rather than skipped.
ThresholdChoice select_threshold_file(const std::vector<std::string>& gpu_names, const std::filesystem::path& dir);

}  // namespace gpuaccept
