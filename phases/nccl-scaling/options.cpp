#include "nccl-scaling/options.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "common/error.h"
#include "nccl-scaling/collective.h"

namespace gpuaccept::nccl_scaling {

namespace {

constexpr Scale kScaleOrder[] = {Scale::IntraNode, Scale::InterNode, Scale::All, Scale::GpuPair, Scale::NodePair,
                                  Scale::HcaLoopback};
constexpr std::size_t kQuickFullIterBytes = std::size_t{256} << 20;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string_view scale_name(Scale s) {
  switch (s) {
    case Scale::IntraNode: return "intra_node";
    case Scale::InterNode: return "inter_node";
    case Scale::All: return "all";
    case Scale::GpuPair: return "gpu_pair";
    case Scale::NodePair: return "node_pair";
    case Scale::HcaLoopback: return "hca_loopback";
  }
  return "?";
}

std::optional<Scale> parse_scale(std::string_view s) {
  for (Scale k : kScaleOrder)
    if (scale_name(k) == s) return k;
  return std::nullopt;
}

bool is_pair_scale(Scale s) { return s == Scale::GpuPair || s == Scale::NodePair; }

bool CliValues::given(std::string_view long_name) const {
  while (long_name.starts_with('-')) long_name.remove_prefix(1);  // CLI11 keeps long names without dashes
  for (const auto* o : options)
    if (o->check_lname(std::string(long_name))) return o->count() > 0;
  return false;
}

void add_cli_options(CLI::App& app, CliValues& v) {
  auto keep = [&](CLI::Option* o) { v.options.push_back(o); };
  keep(app.add_option("-b,--min-bytes", v.min_bytes, "smallest size, nccl-tests syntax: 8, 64K, 1M, 8G [8]"));
  keep(app.add_option("-e,--max-bytes", v.max_bytes, "largest size [8G]"));
  keep(app.add_option("-f,--step-factor", v.step_factor, "size multiplier between steps [2]"));
  keep(app.add_option("-n,--iters", v.iters, "operations per timed batch [20]; quick shrinks it above 256M"));
  keep(app.add_option("-w,--warmup-iters", v.warmup_iters, "untimed operations before each size [5]"));
  keep(app.add_option("--batches", v.batches, "timed batches per size; the time is their median [quick 3, full 5]"));
  keep(app.add_option("-c,--check", v.check, "verify every result on the device: 1 or 0 [1]"));
  keep(app.add_option("--collectives", v.collectives,
                      "comma list [all_reduce,all_gather,reduce_scatter,broadcast,reduce,alltoall,sendrecv]")
           ->delimiter(','));
  keep(app.add_option("--dtypes", v.dtypes, "comma list of float, bf16 [float,bf16]")->delimiter(','));
  keep(app.add_option("--scales", v.scales, "comma list of intra_node, inter_node, all, gpu_pair, node_pair, hca_loopback [all six]")
           ->delimiter(','));
  keep(app.add_option("--timeout", v.timeout_s, "seconds a batch of collectives may take before the rank gives up [120]"));
  keep(app.add_option("--profile", v.profile, "quick or full [quick]"));
  keep(app.add_option("--pair-bytes", v.pair_bytes, "all_reduce size of the pairwise tests [256M]"));
  keep(app.add_option("--pair-mode", v.pair_mode, "node pairs with all_gpus of both nodes or one_gpu each [all_gpus]"));
  keep(app.add_option("--pair-outlier-pct", v.pair_outlier_pct, "a pair this many % below the median fails [15]"));
  keep(app.add_flag("--nonblocking", v.nonblocking, "nonblocking NCCL communicators (costs small-message latency)"));
  keep(app.add_option("--checkpoint-interval", v.checkpoint_interval_s, "seconds between results checkpoints [5]"));
  keep(app.add_option("--scale-budget", v.scale_budget_s,
                      "seconds each scale's sweep may take; sizes that would not fit are left out (SKIP), 0: none "
                      "[quick 60, full 1200]"));
  // Fault injection for the kill test (tests/gpu/nccl_kill.sh); not for operators.
  add_debug_fault_flags(app, v.debug_fault);
  // The GPU machine has no RDMA port: its test of the hca_loopback path (tests/gpu/nccl_local.sh).
  app.add_flag("--debug-loopback-without-rdma", v.loopback_without_rdma)->group("");
}

std::optional<std::size_t> parse_size(std::string_view text) {
  std::string s = lower(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  auto unit_letter = [](char c) { return c == 'k' || c == 'm' || c == 'g' || c == 't'; };
  if (s.size() >= 3 && s.ends_with("ib") && unit_letter(s[s.size() - 3])) s.resize(s.size() - 2);  // 64KiB
  else if (s.size() >= 2 && s.ends_with("b")) s.pop_back();                                       // 64KB, 8B
  if (s.empty()) return std::nullopt;
  double unit = 1;
  switch (s.back()) {
    case 'k': unit = 1024.0; break;
    case 'm': unit = 1024.0 * 1024; break;
    case 'g': unit = 1024.0 * 1024 * 1024; break;
    case 't': unit = 1024.0 * 1024 * 1024 * 1024; break;
    default: break;
  }
  if (unit != 1) s.pop_back();
  if (s.empty()) return std::nullopt;
  std::size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(s, &pos);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (pos != s.size() || !(value >= 0) || !std::isfinite(value)) return std::nullopt;
  const double bytes = value * unit;
  if (bytes > static_cast<double>(std::numeric_limits<std::size_t>::max() / 2)) return std::nullopt;
  return static_cast<std::size_t>(bytes);
}

std::vector<std::size_t> size_sweep(std::size_t min_bytes, std::size_t max_bytes, int factor) {
  std::vector<std::size_t> out;
  if (factor < 2 || min_bytes == 0) return out;
  for (std::size_t s = min_bytes; s <= max_bytes; s *= static_cast<std::size_t>(factor)) {
    out.push_back(s);
    if (s > max_bytes / static_cast<std::size_t>(factor)) break;  // no overflow
  }
  return out;
}

IterPlan iter_plan(const Options& o, std::size_t bytes) {
  IterPlan p{o.warmup_iters, o.iters, o.batches};
  if (o.profile == Profile::Quick && bytes > kQuickFullIterBytes) {
    const double f = static_cast<double>(kQuickFullIterBytes) / static_cast<double>(bytes);
    p.iters = std::max(2, static_cast<int>(o.iters * f));
    p.warmup = std::min(p.warmup, p.iters);
  }
  return p;
}

namespace {

// One setting: the flag when given, else the config key, else the current default.
class Resolver {
 public:
  Resolver(const CliValues& cli, const Config& config) : cli_(cli), config_(config) {}

  template <typename T>
  void pick(T& out, std::string_view flag, const T& flag_value, std::string_view key) {
    if (cli_.given(flag)) out = flag_value;
    else if (auto v = config_.get_optional<T>(key)) out = *v;
  }

  void pick_size(std::size_t& out, std::string_view flag, const std::string& flag_value, std::string_view key) {
    if (cli_.given(flag)) {
      auto v = parse_size(flag_value);
      if (!v) throw InputError(fmt::format("{} {}: not a size (examples: 8, 64K, 256M, 8G)", flag, flag_value));
      out = *v;
    } else if (auto text = config_.get_optional<std::string>(key)) {
      auto v = parse_size(*text);
      if (!v) throw config_.error_at(config_.find(key), key, fmt::format("not a size: '{}' (examples: 8, 64K, 256M, 8G)", *text));
      out = *v;
    }
  }

  std::vector<std::string> pick_list(std::string_view flag, const std::vector<std::string>& flag_value,
                                     std::string_view key, std::vector<std::string> fallback) {
    if (cli_.given(flag)) return flag_value;
    if (auto v = config_.get_optional<std::vector<std::string>>(key)) return *v;
    return fallback;
  }

  const Config& config() const { return config_; }

 private:
  const CliValues& cli_;
  const Config& config_;
};

}  // namespace

Options resolve_options(const CliValues& cli, const Config& config) {
  // Every key read below: a typo (`nccl.colectives`) is refused, not left to the default.
  config.refuse_unknown_keys("nccl", {
      "batches", "check", "checkpoint_interval_s", "collectives", "dtypes", "heartbeat_s", "iters",
      "max_bytes", "min_bytes", "nonblocking", "pair_bytes", "pair_mode", "pair_outlier_pct", "profile",
      "scale_budget_s", "scales", "step_factor", "timeout_s", "warmup_iters"});
  Resolver r(cli, config);
  Options o;

  std::string profile = "quick";
  r.pick(profile, "--profile", cli.profile, "nccl.profile");
  if (profile == "quick") o.profile = Profile::Quick;
  else if (profile == "full") o.profile = Profile::Full;
  else throw InputError(fmt::format("nccl profile '{}': want quick or full", profile));
  if (o.profile == Profile::Full) o.batches = 5;
  // Quick: every scale in a minute, so the phase ends within minutes even on a fabric at 1.5
  // GB/s (five scales, two of them pairwise and short); full: twenty minutes a scale.
  o.scale_budget_s = o.profile == Profile::Full ? 1200 : 60;

  r.pick_size(o.min_bytes, "--min-bytes", cli.min_bytes, "nccl.min_bytes");
  r.pick_size(o.max_bytes, "--max-bytes", cli.max_bytes, "nccl.max_bytes");
  r.pick(o.step_factor, "--step-factor", cli.step_factor, "nccl.step_factor");
  r.pick(o.iters, "--iters", cli.iters, "nccl.iters");
  r.pick(o.warmup_iters, "--warmup-iters", cli.warmup_iters, "nccl.warmup_iters");
  r.pick(o.batches, "--batches", cli.batches, "nccl.batches");
  int check = o.check ? 1 : 0;
  if (cli.given("--check")) check = cli.check;
  else if (auto v = config.get_optional<bool>("nccl.check")) check = *v ? 1 : 0;
  o.check = check != 0;
  r.pick(o.timeout_s, "--timeout", cli.timeout_s, "nccl.timeout_s");
  r.pick_size(o.pair_bytes, "--pair-bytes", cli.pair_bytes, "nccl.pair_bytes");
  std::string pair_mode = "all_gpus";
  r.pick(pair_mode, "--pair-mode", cli.pair_mode, "nccl.pair_mode");
  if (pair_mode == "all_gpus") o.pair_mode = PairMode::AllGpus;
  else if (pair_mode == "one_gpu") o.pair_mode = PairMode::OneGpu;
  else throw InputError(fmt::format("nccl pair mode '{}': want all_gpus or one_gpu", pair_mode));
  r.pick(o.pair_outlier_pct, "--pair-outlier-pct", cli.pair_outlier_pct, "nccl.pair_outlier_pct");
  if (cli.given("--nonblocking")) o.nonblocking = cli.nonblocking;
  else if (auto v = config.get_optional<bool>("nccl.nonblocking")) o.nonblocking = *v;
  r.pick(o.checkpoint_interval_s, "--checkpoint-interval", cli.checkpoint_interval_s, "nccl.checkpoint_interval_s");
  if (auto v = config.get_optional<double>("nccl.heartbeat_s")) o.heartbeat_s = *v;
  r.pick(o.scale_budget_s, "--scale-budget", cli.scale_budget_s, "nccl.scale_budget_s");
  o.debug_fault = cli.debug_fault;
  o.loopback_without_rdma = cli.loopback_without_rdma;

  std::vector<std::string> all_names;
  for (const auto* c : all_collectives()) all_names.emplace_back(c->name);
  for (const auto& name : r.pick_list("--collectives", cli.collectives, "nccl.collectives", all_names)) {
    if (!find_collective(name))
      throw InputError(fmt::format("unknown collective '{}': want some of {}", name, fmt::join(all_names, ", ")));
    if (std::find(o.collectives.begin(), o.collectives.end(), name) == o.collectives.end())
      o.collectives.push_back(name);
  }
  for (const auto& name : r.pick_list("--dtypes", cli.dtypes, "nccl.dtypes", {"float", "bf16"})) {
    const auto d = parse_dtype(name);
    if (!d) throw InputError(fmt::format("unknown dtype '{}': want float or bf16", name));
    if (std::find(o.dtypes.begin(), o.dtypes.end(), *d) == o.dtypes.end()) o.dtypes.push_back(*d);
  }
  std::vector<Scale> wanted;
  for (const auto& name : r.pick_list("--scales", cli.scales, "nccl.scales",
                                      {"intra_node", "inter_node", "all", "gpu_pair", "node_pair", "hca_loopback"})) {
    const auto s = parse_scale(name);
    if (!s) throw InputError(fmt::format("unknown scale '{}': want intra_node, inter_node, all, gpu_pair, node_pair, hca_loopback", name));
    wanted.push_back(*s);
  }
  for (Scale s : kScaleOrder)  // a fixed order, whatever order they were given in
    if (std::find(wanted.begin(), wanted.end(), s) != wanted.end()) o.scales.push_back(s);

  if (o.min_bytes == 0) throw InputError("nccl min bytes must be > 0");
  if (o.min_bytes > o.max_bytes)
    throw InputError(fmt::format("nccl min bytes {} > max bytes {}", o.min_bytes, o.max_bytes));
  if (o.step_factor < 2) throw InputError(fmt::format("nccl step factor {}: want >= 2", o.step_factor));
  if (o.iters < 1) throw InputError(fmt::format("nccl iters {}: want >= 1", o.iters));
  if (o.warmup_iters < 0) throw InputError(fmt::format("nccl warmup iters {}: want >= 0", o.warmup_iters));
  if (o.batches < 1) throw InputError(fmt::format("nccl batches {}: want >= 1", o.batches));
  if (!(o.timeout_s > 0)) throw InputError(fmt::format("nccl timeout {} s: want > 0", o.timeout_s));
  if (o.pair_bytes == 0) throw InputError("nccl pair bytes must be > 0");
  if (!(o.pair_outlier_pct > 0 && o.pair_outlier_pct < 100))
    throw InputError(fmt::format("nccl pair outlier {}%: want between 0 and 100", o.pair_outlier_pct));
  if (!(o.heartbeat_s > 0)) throw InputError(fmt::format("nccl heartbeat {} s: want > 0", o.heartbeat_s));
  if (o.scale_budget_s < 0) throw InputError(fmt::format("nccl scale budget {} s: want >= 0 (0: none)", o.scale_budget_s));
  if (o.collectives.empty() || o.dtypes.empty()) throw InputError("nothing to run: no collective or no dtype");
  return o;
}

}  // namespace gpuaccept::nccl_scaling
