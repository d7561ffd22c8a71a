// A threshold file (configs/thresholds/*.yaml): the GPU models it is written for and
// its rules. A file may extend another (`extends: generic.yaml`), whose rules come
// first. Every error names the file, the line and the key, e.g.
//   configs/thresholds/x.yaml:12: key 'rules[3].min': expected a number, got 'fast'
// and unknown keys are errors too, so a typo cannot silently disable a rule.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "thresholds/rule.h"

namespace gpuaccept {

struct ThresholdSet {
  std::filesystem::path path;
  std::string description;
  std::vector<std::string> models;  // GPU names as NVML gives them, e.g. "NVIDIA H200"
  std::shared_ptr<const GpuAssumption> gpu;  // `gpu:`: what this file's floors assume (rules' `assumes`)
  std::vector<Rule> rules;

  // same_gpu_model with one of `models` (thresholds/gpu_facts.h).
  bool applies_to_model(std::string_view gpu_name) const;

  static ThresholdSet load(const std::filesystem::path& path);  // throws InputError
  // `name` is used in messages and to resolve `extends` relative to its directory.
  static ThresholdSet parse(const std::string& text, const std::string& name);
};

}  // namespace gpuaccept
