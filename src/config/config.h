// Config: a YAML file (configs/*.yaml) read once, with typed look-ups by dotted key
// ("discover.expected_gpus_per_node"). Every error names the file, the line and the
// key, so an operator can fix a config without reading code.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/error.h"

namespace gpuaccept {

// The top-level sections of a config file: one per phase that reads one, and `fabric`
// (the network between nodes: config/fabric_config.h), which discover and nccl-scaling read.
inline constexpr std::string_view kConfigSections[] = {"discover", "smoke", "nccl", "ddp", "fsdp_lora", "fabric"};

class Config {
 public:
  Config() = default;  // empty: every look-up returns its fallback
  static Config load(const std::filesystem::path& path);               // throws InputError
  static Config parse(const std::string& text, const std::string& name);  // for tests and embedded configs

  const std::string& source_name() const { return name_; }
  const std::string& text() const { return text_; }
  bool empty() const { return !root_ || root_.IsNull(); }
  const YAML::Node& root() const { return root_; }  // for readers that walk the whole file

  // The node at a dotted key, or an undefined node when any part is missing.
  YAML::Node find(std::string_view dotted_key) const;

  // The value at a dotted key, or `fallback` when absent. A value of the wrong type
  // throws InputError: "<file>:<line>: key 'a.b': expected <type>, got '<text>'".
  template <typename T>
  T get(std::string_view dotted_key, T fallback) const {
    const YAML::Node n = find(dotted_key);
    if (!n.IsDefined() || n.IsNull()) return fallback;
    return as<T>(n, dotted_key);
  }

  // As get(), for values that must be > 0 (get_positive) or >= 0 (get_non_negative): anything
  // else throws InputError naming the file, line and key.
  template <typename T>
  T get_positive(std::string_view dotted_key, T fallback) const {
    const T v = get<T>(dotted_key, fallback);
    if (!(v > T{})) throw error_at(find(dotted_key), dotted_key, fmt::format("must be positive, got {}", v));
    return v;
  }
  template <typename T>
  T get_non_negative(std::string_view dotted_key, T fallback) const {
    const T v = get<T>(dotted_key, fallback);
    if (v < T{}) throw error_at(find(dotted_key), dotted_key, fmt::format("must not be negative, got {}", v));
    return v;
  }

  template <typename T>
  std::optional<T> get_optional(std::string_view dotted_key) const {
    const YAML::Node n = find(dotted_key);
    if (!n.IsDefined() || n.IsNull()) return std::nullopt;
    return as<T>(n, dotted_key);
  }

  // Converts a node found under this config, naming file/line/key on failure.
  template <typename T>
  T as(const YAML::Node& n, std::string_view key) const {
    try {
      return n.as<T>();
    } catch (const YAML::Exception&) {
      throw error_at(n, key, fmt::format("expected {}, got '{}'", type_name<T>(), describe(n)));
    }
  }

  InputError error_at(const YAML::Node& n, std::string_view key, const std::string& what) const;

  // An operator's typo (`smoke: {gemm_sizze: 4096}`) must not leave a default silently in
  // force. Throws InputError naming the file, line and key of the first key under `section`
  // (a dotted key; absent or empty: nothing to check) that is not in `known`, with the known
  // key a typo most likely meant ("did you mean 'gemm_sizes'?").
  void refuse_unknown_keys(std::string_view section, std::initializer_list<std::string_view> known) const;
  // The same for the top level: the sections of the phases (kConfigSections).
  void refuse_unknown_sections() const;

 private:
  std::string name_;
  std::string text_;
  YAML::Node root_;

  static std::string describe(const YAML::Node& n);
  template <typename T>
  static const char* type_name() {
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    else if constexpr (std::is_integral_v<T>) return "an integer";
    else if constexpr (std::is_floating_point_v<T>) return "a number";
    else if constexpr (std::is_same_v<T, std::string>) return "a string";
    else return "a list";
  }
};

}  // namespace gpuaccept
