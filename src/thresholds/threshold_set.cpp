#include "thresholds/threshold_set.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/config.h"

namespace gpuaccept {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kFileKeys = {"description", "models", "gpu", "extends", "rules"};
const std::vector<std::string> kGpuKeys = {"sku", "form_factor", "power_limit_w"};
const std::vector<std::string> kRuleKeys = {
    "name", "phase", "test", "metric", "where", "min", "max",
    "fleet_below_median_pct", "fleet_above_median_pct", "min_line_rate_fraction", "severity", "basis"};
const std::vector<std::string> kRangeKeys = {"min", "max"};

// Walks one threshold file's YAML through Config, which phrases every error as
// "<file>:<line>: key '<key>': <what>".
class ThresholdFileReader {
 public:
  // `chain`: the files that extend this one, outermost first, to refuse a cycle.
  ThresholdFileReader(const Config& config, std::vector<fs::path> chain) : config_(config), chain_(std::move(chain)) {}

  ThresholdSet read() const {
    const YAML::Node& root = config_.root();
    if (config_.empty()) throw InputError(fmt::format("{}: empty threshold file", config_.source_name()));
    require_known_keys(root, "", kFileKeys);
    ThresholdSet set;
    set.path = config_.source_name();
    if (const auto extends = config_.get_optional<std::string>("extends")) set.rules = base_rules(*extends);
    set.description = config_.get<std::string>("description", "");
    set.models = config_.get<std::vector<std::string>>("models", {});
    set.gpu = read_gpu(set.models);
    const YAML::Node rules = config_.find("rules");
    if (!rules.IsDefined() || rules.IsNull()) throw config_.error_at(root, "rules", "missing: a list of rules");
    if (!rules.IsSequence()) throw config_.error_at(rules, "rules", "expected a list of rules");
    for (std::size_t i = 0; i < rules.size(); ++i) {
      const std::string prefix = fmt::format("rules[{}]", i);
      Rule rule = read_rule(rules[i], prefix);
      // A model's floor holds only on the GPU it was measured on: the file must say which.
      if (rule.min && !set.models.empty()) {
        if (!set.gpu)
          throw config_.error_at(rules[i], prefix + ".min",
                                 "a floor in a model's file needs the file's `gpu:` (sku, form_factor, power_limit_w): "
                                 "the GPU it was measured on, to which alone it applies");
        rule.assumes = set.gpu;
      }
      for (const auto& earlier : set.rules)
        if (earlier.name == rule.name)
          throw config_.error_at(rules[i]["name"], prefix + ".name",
                                 fmt::format("rule name '{}' is already used at {}", rule.name, earlier.origin));
      set.rules.push_back(std::move(rule));
    }
    return set;
  }

  static ThresholdSet load(const fs::path& path, std::vector<fs::path> chain) {
    const Config config = Config::load(path);
    chain.push_back(fs::weakly_canonical(path));
    return ThresholdFileReader(config, std::move(chain)).read();
  }

 private:
  const Config& config_;
  std::vector<fs::path> chain_;

  std::vector<Rule> base_rules(const std::string& extends) const {
    const YAML::Node n = config_.find("extends");
    const fs::path base = fs::path(config_.source_name()).parent_path() / extends;
    // The error_code overloads: a name the filesystem refuses (too long, a component that is a
    // file, no permission) is this key's error too, not a filesystem_error naming no key
    // (fuzzing found `extends:` with 2 kB of name).
    std::error_code ec;
    const fs::file_status status = fs::status(base, ec);
    if (status.type() == fs::file_type::not_found)
      throw config_.error_at(n, "extends", fmt::format("{} does not exist", base.string()));
    if (ec) throw config_.error_at(n, "extends", fmt::format("{}: {}", base.string(), ec.message()));
    if (!fs::is_regular_file(status)) throw config_.error_at(n, "extends", fmt::format("{} is not a file", base.string()));
    if (std::find(chain_.begin(), chain_.end(), fs::weakly_canonical(base)) != chain_.end())
      throw config_.error_at(n, "extends", fmt::format("{} extends itself through this file", base.string()));
    return load(base, chain_).rules;
  }

  // `gpu:`, required with its three keys where present.
  std::shared_ptr<const GpuAssumption> read_gpu(const std::vector<std::string>& models) const {
    const YAML::Node n = config_.find("gpu");
    if (!n.IsDefined() || n.IsNull()) return nullptr;
    if (!n.IsMap()) throw config_.error_at(n, "gpu", "expected a mapping with sku, form_factor and power_limit_w");
    require_known_keys(n, "gpu", kGpuKeys);
    if (models.empty()) throw config_.error_at(n, "gpu", "a file without `models:` is for no GPU in particular");
    GpuAssumption a;
    a.models = models;
    a.sku = optional<std::string>(n, "gpu", "sku").value_or("");
    if (a.sku.empty()) throw config_.error_at(n, "gpu.sku", "missing: the SKU the floors were measured on, in words");
    a.form_factor = optional<std::string>(n, "gpu", "form_factor").value_or("");
    if (a.form_factor != "SXM" && a.form_factor != "PCIe" && a.form_factor != "NVL")
      throw config_.error_at(n, "gpu.form_factor", fmt::format("expected SXM, PCIe or NVL, got '{}'", a.form_factor));
    const auto watts = optional<double>(n, "gpu", "power_limit_w");
    if (!watts || !(*watts > 0))
      throw config_.error_at(n, "gpu.power_limit_w", "missing: the power limit in watts the floors assume");
    a.power_limit_w = *watts;
    return std::make_shared<const GpuAssumption>(std::move(a));
  }

  void require_known_keys(const YAML::Node& map, const std::string& prefix, const std::vector<std::string>& known) const {
    for (const auto& kv : map) {
      const std::string key = kv.first.Scalar();
      if (std::find(known.begin(), known.end(), key) == known.end())
        throw config_.error_at(kv.first, prefix.empty() ? key : prefix + "." + key,
                               fmt::format("unknown key (expected one of: {})", fmt::join(known, ", ")));
    }
  }

  template <typename T>
  std::optional<T> optional(const YAML::Node& map, const std::string& prefix, const char* key) const {
    const YAML::Node n = map[key];
    if (!n.IsDefined() || n.IsNull()) return std::nullopt;
    return config_.as<T>(n, prefix + "." + key);
  }

  std::string required_string(const YAML::Node& map, const std::string& prefix, const char* key) const {
    auto v = optional<std::string>(map, prefix, key);
    if (!v || v->empty()) throw config_.error_at(map, prefix + "." + key, "missing: every rule needs it");
    return *v;
  }

  Rule read_rule(const YAML::Node& node, const std::string& prefix) const {
    if (!node.IsMap()) throw config_.error_at(node, prefix, "expected a rule (a mapping with name, phase, test, ...)");
    require_known_keys(node, prefix, kRuleKeys);
    Rule r;
    r.name = required_string(node, prefix, "name");
    r.origin = fmt::format("{}:{}", config_.source_name(), node.Mark().line + 1);
    r.phase = required_string(node, prefix, "phase");
    r.test = required_string(node, prefix, "test");
    r.metric = optional<std::string>(node, prefix, "metric").value_or("");
    r.where = read_where(node["where"], prefix + ".where");
    r.min = optional<double>(node, prefix, "min");
    r.max = optional<double>(node, prefix, "max");
    r.fleet_below_median_pct = read_percentage(node, prefix, "fleet_below_median_pct");
    r.fleet_above_median_pct = read_percentage(node, prefix, "fleet_above_median_pct");
    r.min_line_rate_fraction = read_fraction(node, prefix, "min_line_rate_fraction");
    r.severity = read_severity(node, prefix);
    r.basis = optional<std::string>(node, prefix, "basis").value_or("");
    if (!r.min && !r.max && !r.fleet_below_median_pct && !r.fleet_above_median_pct && !r.min_line_rate_fraction)
      throw config_.error_at(node, prefix,
                             "no bound: give min, max, min_line_rate_fraction, fleet_below_median_pct or "
                             "fleet_above_median_pct");
    // An absolute number without its source is a number nobody can defend later.
    if ((r.min || r.max || r.min_line_rate_fraction) && r.basis.empty())
      throw config_.error_at(node, prefix + ".basis",
                             "missing: a rule with min, max or min_line_rate_fraction says where the number comes from");
    return r;
  }

  std::optional<double> read_percentage(const YAML::Node& node, const std::string& prefix, const char* key) const {
    const auto v = optional<double>(node, prefix, key);
    if (v && (*v <= 0 || *v >= 100))
      throw config_.error_at(node[key], prefix + "." + key, fmt::format("expected a percentage in (0, 100), got {}", *v));
    return v;
  }

  // A share of the line rate: above 0, and at most the whole of it.
  std::optional<double> read_fraction(const YAML::Node& node, const std::string& prefix, const char* key) const {
    const auto v = optional<double>(node, prefix, key);
    if (v && !(*v > 0 && *v <= 1))
      throw config_.error_at(node[key], prefix + "." + key, fmt::format("expected a fraction in (0, 1], got {}", *v));
    return v;
  }

  Severity read_severity(const YAML::Node& node, const std::string& prefix) const {
    const std::string key = prefix + ".severity";
    const YAML::Node n = node["severity"];
    if (!n.IsDefined() || n.IsNull()) throw config_.error_at(node, key, "missing: FAIL or WARN");
    const auto text = config_.as<std::string>(n, key);
    if (text == "FAIL") return Severity::Fail;
    if (text == "WARN") return Severity::Warn;
    throw config_.error_at(n, key, fmt::format("expected FAIL or WARN, got '{}'", text));
  }

  ParamFilter read_where(const YAML::Node& node, const std::string& prefix) const {
    ParamFilter f;
    if (!node.IsDefined() || node.IsNull()) return f;
    if (!node.IsMap()) throw config_.error_at(node, prefix, "expected a mapping of parameter names to values");
    for (const auto& kv : node) {
      const std::string param = kv.first.Scalar();
      const std::string key = prefix + "." + param;
      if (kv.second.IsMap()) {
        require_known_keys(kv.second, key, kRangeKeys);
        ParamRange r{optional<double>(kv.second, key, "min"), optional<double>(kv.second, key, "max")};
        if (!r.min && !r.max) throw config_.error_at(kv.second, key, "a range needs min, max or both");
        f.range[param] = r;
      } else {
        f.equal[param] = config_.as<std::string>(kv.second, key);
      }
    }
    return f;
  }
};

}  // namespace

bool ThresholdSet::applies_to_model(std::string_view gpu_name) const {
  return std::any_of(models.begin(), models.end(), [&](const auto& m) { return same_gpu_model(m, gpu_name); });
}

ThresholdSet ThresholdSet::load(const fs::path& path) { return ThresholdFileReader::load(path, {}); }

ThresholdSet ThresholdSet::parse(const std::string& text, const std::string& name) {
  const Config config = Config::parse(text, name);
  return ThresholdFileReader(config, {fs::weakly_canonical(name)}).read();
}

}  // namespace gpuaccept
