#include "model/slowest_pair.h"

#include <charconv>

#include <fmt/format.h>

#include "thresholds/record_label.h"

namespace gpuaccept::report {

namespace {

std::string param(const Record& r, const char* key) {
  const auto it = r.params.find(key);
  return it == r.params.end() ? std::string() : it->second;
}

bool measured_node_pair(const Record& r) {
  return r.phase == "nccl-scaling" && r.test == "pair_busbw" && r.metric == "busbw" && param(r, "scale") == "node_pair" &&
         r.has_value() && r.status != Status::Skip && r.status != Status::Error;
}

}  // namespace

std::optional<Record> slowest_node_pair(const std::vector<Record>& records) {
  const Record* slowest = nullptr;
  for (const auto& r : records)
    if (measured_node_pair(r) && (!slowest || r.value < slowest->value)) slowest = &r;
  if (!slowest) return std::nullopt;
  return *slowest;
}

std::string slowest_pair_text(const Record& pair) {
  const std::string bytes = param(pair, "bytes");
  double n = 0;
  const auto [end, ec] = std::from_chars(bytes.data(), bytes.data() + bytes.size(), n);
  const bool number = !bytes.empty() && ec == std::errc() && end == bytes.data() + bytes.size();
  const std::string size = number ? " " + format_bytes(n) : std::string();
  return fmt::format("slowest node pair: {} - {} {} GB/s (pair_busbw{})", param(pair, "a"), param(pair, "b"),
                     format_value(pair.value), size);
}

bool fails_between_nodes(const RuleVerdict& v) {
  if (v.outcome != RuleOutcome::Fail || !v.record || v.record->phase != "nccl-scaling") return false;
  const std::string scale = param(*v.record, "scale");
  return scale == "inter_node" || scale == "all";
}

void name_slowest_pair(std::vector<RuleVerdict>& verdicts, const std::vector<Record>& records) {
  bool any = false;
  for (const auto& v : verdicts) any = any || fails_between_nodes(v);
  if (!any) return;
  const auto pair = slowest_node_pair(records);
  if (!pair) return;
  const std::string text = slowest_pair_text(*pair);
  for (auto& v : verdicts)
    if (fails_between_nodes(v)) v.message += "; " + text;
}

}  // namespace gpuaccept::report
