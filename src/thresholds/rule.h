// A threshold rule: which records it applies to (phase, test, metric, parameter
// filters) and what it demands of their values: an absolute bound, a bound relative
// to the fleet median of the same measurement on the other GPUs/nodes, a fraction of
// the line rate the record itself names (nccl-scaling's inter-node rows), or several.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "results/record.h"
#include "thresholds/gpu_facts.h"

namespace gpuaccept {

enum class Severity { Warn, Fail };

// The param of a record that names the line rate, in Gb/s, its measurement can reach
// (nccl-scaling's rows across nodes: the RDMA ports nearest to the group's GPUs on its
// most limited node; docs/fabric.md).
inline constexpr const char* kLineRateParam = "line_rate_gbps";

// The record's line rate in Gb/s: its kLineRateParam as a positive finite number, else none.
std::optional<double> line_rate_gbps_of(const Record& r);

std::string_view to_string(Severity s);

// An inclusive numeric range on one parameter, e.g. bytes in [128 MiB, 256 MiB].
struct ParamRange {
  std::optional<double> min, max;
  bool contains(double v) const;
};

// `where:` of a rule. A scalar is an exact string match ("dtype: bf16"); a mapping
// with min/max is a numeric range ("bytes: {min: 134217728}"). A record lacking a
// named parameter does not match.
struct ParamFilter {
  std::map<std::string, std::string> equal;
  std::map<std::string, ParamRange> range;
  bool matches(const Params& params) const;
};

struct Rule {
  std::string name;
  std::string origin;  // "configs/thresholds/h200-141gb.yaml:42": where the rule is written
  std::string phase, test;
  std::string metric;  // "": any metric of the test
  ParamFilter where;
  std::optional<double> min, max;
  // Flag a value more than this percentage below (above) the median of its peers:
  // the same phase/test/metric/params on other ranks, nodes and GPUs.
  std::optional<double> fleet_below_median_pct, fleet_above_median_pct;
  // Demand at least this fraction of the record's line rate: bound = fraction x
  // line_rate_gbps / 8 GB/s. A record without a line rate is not one this rule judges.
  std::optional<double> min_line_rate_fraction;
  Severity severity = Severity::Fail;
  std::string basis;  // where min/max come from, quoted in every message
  // A floor (min) of a model's file: the GPU it was measured on (the file's `gpu:`). The floor
  // judges only records whose GPUs NVML reported as that GPU (thresholds/gpu_facts.h). Shared:
  // every verdict holds a copy of its rule, and 8,192 GPUs make hundreds of thousands.
  std::shared_ptr<const GpuAssumption> assumes;

  // Whether the record is one this rule judges: it matches and has a value (and, for a
  // rule with min_line_rate_fraction, a line rate). SKIP and ERROR records carry no
  // measurement; their own status already speaks for them.
  bool applies_to(const Record& r) const;
};

}  // namespace gpuaccept
