#include "model/headline.h"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

namespace gpuaccept::report {

namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

std::string param(const Record& r, const std::string& key) {
  const auto it = r.params.find(key);
  return it == r.params.end() ? std::string() : it->second;
}

double number_param(const Record& r, const std::string& key) {
  try {
    return std::stod(param(r, key));
  } catch (const std::exception&) {
    return 0;
  }
}

bool measured(const Record& r) { return r.has_value() && r.status != Status::Skip; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Groups records by `key_of` (nullopt: not this figure) and keeps, per group, the values of
// the records with the largest `size_of`.
template <class KeyOf, class SizeOf>
std::map<Labels, std::vector<double>> at_largest(const std::vector<Record>& records, KeyOf key_of, SizeOf size_of) {
  std::map<Labels, std::pair<double, std::vector<double>>> best;
  for (const auto& r : records) {
    if (!measured(r)) continue;
    const std::optional<Labels> key = key_of(r);
    if (!key) continue;
    const double size = size_of(r);
    auto& [largest, values] = best[*key];
    if (values.empty() || size > largest) {
      largest = size;
      values.clear();
    }
    if (size == largest) values.push_back(r.value);
  }
  std::map<Labels, std::vector<double>> out;
  for (auto& [k, v] : best) out[k] = std::move(v.second);
  return out;
}

void median_and_min(std::vector<HeadlineFigure>& out, const std::string& name, const std::string& unit,
                    const std::map<Labels, std::vector<double>>& groups) {
  for (const auto& [labels, values] : groups) {
    for (const char* stat : {"median", "min"}) {
      Labels l = labels;
      l.emplace_back("stat", stat);
      const double v = std::string_view(stat) == "min" ? *std::min_element(values.begin(), values.end()) : median(values);
      out.push_back({name, unit, std::move(l), v});
    }
  }
}

void tokens_per_gpu(std::vector<HeadlineFigure>& out, const std::vector<Record>& records, const std::string& phase,
                    const std::string& name) {
  for (const auto& r : records)
    if (measured(r) && r.phase == phase && r.test == "throughput" && r.metric == "tokens_per_s_per_gpu" &&
        param(r, "scale") == "all")
      out.push_back({name, "tokens/s", {{"gpus", param(r, "gpus")}}, r.value});
}

}  // namespace

std::vector<HeadlineFigure> headline_figures(const std::vector<Record>& records) {
  std::vector<HeadlineFigure> out;

  const auto busbw = at_largest(
      records,
      [](const Record& r) -> std::optional<Labels> {
        const std::string scale = param(r, "scale");
        if (r.phase != "nccl-scaling" || r.metric != "busbw" ||
            (scale != "intra_node" && scale != "inter_node" && scale != "all"))
          return std::nullopt;
        return Labels{{"collective", r.test}, {"scale", scale}, {"ranks", param(r, "ranks")}};
      },
      [](const Record& r) { return number_param(r, "bytes"); });
  for (const auto& [labels, values] : busbw)
    out.push_back({"nccl_busbw", "GB/s", labels, *std::min_element(values.begin(), values.end())});

  median_and_min(out, "gemm_tflops", "TFLOP/s",
                 at_largest(
                     records,
                     [](const Record& r) -> std::optional<Labels> {
                       if (r.phase != "smoke" || r.test != "gemm" || r.metric != "tflops") return std::nullopt;
                       return Labels{{"dtype", param(r, "dtype")}};
                     },
                     [](const Record& r) { return number_param(r, "m") * number_param(r, "n") * number_param(r, "k"); }));
  median_and_min(out, "memory_bandwidth", "GB/s",
                 at_largest(
                     records,
                     [](const Record& r) -> std::optional<Labels> {
                       if (r.phase != "smoke" || r.test != "memory_bandwidth" || param(r, "kind") != "d2d_copy")
                         return std::nullopt;
                       return Labels{{"kind", "d2d_copy"}};
                     },
                     [](const Record& r) { return number_param(r, "bytes"); }));

  tokens_per_gpu(out, records, "ddp", "ddp_tokens_per_s_per_gpu");
  tokens_per_gpu(out, records, "fsdp-lora", "fsdp_lora_tokens_per_s_per_gpu");
  return out;
}

std::string labels_text(const HeadlineFigure& f) {
  std::string s;
  for (const auto& [k, v] : f.labels) {
    if (!s.empty()) s += ' ';
    s += k == "collective" || k == "dtype" || k == "kind" ? v : fmt::format("{}={}", k, v);
  }
  return s;
}

}  // namespace gpuaccept::report
