#include "nccl-scaling/hca_loopback.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/progress.h"
#include "nccl-scaling/nccl_log.h"
#include "results/child_process.h"

extern char** environ;

namespace gpuaccept::nccl_scaling {

namespace {

std::string self_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "." : exe.parent_path().string();
}

}  // namespace

std::string to_hex(const void* data, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  const auto* b = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[b[i] >> 4];
    out += digits[b[i] & 15];
  }
  return out;
}

bool from_hex(const std::string& hex, void* data, std::size_t n) {
  if (hex.size() != 2 * n) return false;
  auto* b = static_cast<unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = std::strtoul(hex.substr(2 * i, 2).c_str(), nullptr, 16);
    if (!std::isxdigit(static_cast<unsigned char>(hex[2 * i])) || !std::isxdigit(static_cast<unsigned char>(hex[2 * i + 1])))
      return false;
    b[i] = static_cast<unsigned char>(v);
  }
  return true;
}

std::string loopback_answer_text(const LoopbackAnswer& a) {
  return nlohmann::json{{"time_us", a.time_us}, {"wrong", a.wrong}, {"transports", a.transports}, {"error", a.error}}.dump();
}

LoopbackAnswer parse_loopback_answer(const std::string& text) {
  LoopbackAnswer a;
  // The child's last line is its answer; NCCL or CUDA may have printed before it.
  std::string line;
  std::size_t from = 0;
  while (from < text.size()) {
    const auto nl = text.find('\n', from);
    const std::string l = text.substr(from, nl == std::string::npos ? std::string::npos : nl - from);
    if (!l.empty()) line = l;
    if (nl == std::string::npos) break;
    from = nl + 1;
  }
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    a.error = fmt::format("no answer from the loopback child (last line: '{}')", line.substr(0, 200));
    return a;
  }
  a.time_us = j.value("time_us", 0.0);
  a.wrong = j.value("wrong", -1LL);
  a.transports = j.value("transports", "");
  a.error = j.value("error", "");
  return a;
}

LoopbackAnswer run_loopback_child(const LoopbackArgs& args, std::chrono::milliseconds limit) {
  // Everything the child needs is made here, before fork: a forked child of this threaded
  // process may only dup2 and execve.
  const std::string exe = self_dir() + "/gpuaccept-nccl-loopback";
  std::vector<std::string> argv_s = {exe,
                                     "--id", args.nccl_id_hex,
                                     "--rank", std::to_string(args.rank),
                                     "--nranks", std::to_string(args.nranks),
                                     "--device", std::to_string(args.device),
                                     "--bytes", std::to_string(args.bytes),
                                     "--warmup", std::to_string(args.warmup),
                                     "--iters", std::to_string(args.iters)};
  std::vector<std::string> env_s;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    if (kv.starts_with("NCCL_P2P_DISABLE=") || kv.starts_with("NCCL_SHM_DISABLE=")) continue;
    if (!args.nccl_log.empty() && (kv.starts_with("NCCL_DEBUG_FILE=") || kv.starts_with("NCCL_DEBUG=") ||
                                   kv.starts_with("NCCL_DEBUG_SUBSYS=")))
      continue;
    env_s.push_back(kv);
  }
  env_s.push_back("NCCL_P2P_DISABLE=1");
  env_s.push_back("NCCL_SHM_DISABLE=1");
  if (!args.nccl_log.empty()) {
    env_s.push_back("NCCL_DEBUG=INFO");
    env_s.push_back("NCCL_DEBUG_SUBSYS=INIT,NET");
    env_s.push_back("NCCL_DEBUG_FILE=" + args.nccl_log);
  }
  std::vector<char*> argv, envp;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);

  const ChildResult r = run_in_child(
      [&](int fd) {
        dup2(fd, STDOUT_FILENO);
        execve(argv[0], argv.data(), envp.data());
        _exit(127);  // execve failed: no answer, the exit code says so
        return 127;
      },
      limit);
  LoopbackAnswer a = parse_loopback_answer(r.output);
  if (r.end == ChildResult::End::TimedOut)
    a.error = fmt::format("the loopback all-reduce did not end within {:.0f} s", limit.count() / 1000.0);
  else if (r.end == ChildResult::End::Signaled)
    a.error = fmt::format("the loopback child died of {}", signal_text(r.code));
  else if (r.code == 127 && a.error.empty() && a.time_us <= 0)
    a.error = "cannot start " + exe;
  if (!args.nccl_log.empty()) {
    // NCCL's account of the child's transports, then its log is removed.
    std::string text;
    if (FILE* f = std::fopen(args.nccl_log.c_str(), "r")) {
      char buf[4096];
      std::size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
      std::fclose(f);
      std::remove(args.nccl_log.c_str());
    }
    const ObservedTransports seen = parse_nccl_log(text);
    a.transports = fmt::format("{}", fmt::join(seen.kinds, "+"));
  }
  return a;
}

Record hca_loopback_record(const std::string& host, const std::vector<LoopbackAnswer>& answers, std::size_t bytes,
                           const LineRate& line_rate) {
  Record r;
  r.rank = kJobLevel;
  r.node = host;
  r.test = "hca_loopback";
  r.metric = "busbw";
  r.unit = "GB/s";
  const int n = static_cast<int>(answers.size());
  r.params = {{"bytes", std::to_string(bytes)}, {"ranks", std::to_string(n)},
              {"line_rate_gbps", fmt::format("{:g}", line_rate.gbps)}, {"line_rate_source", line_rate.source},
              {"fabric", line_rate.fabric}};
  std::vector<std::string> errors, transports;
  double sum_us = 0;
  long long wrong = 0;
  for (int q = 0; q < n; ++q) {
    const auto& a = answers[static_cast<std::size_t>(q)];
    if (!a.error.empty()) errors.push_back(fmt::format("local rank {}: {}", q, a.error));
    sum_us += a.time_us;
    if (a.wrong > 0) wrong += a.wrong;
    if (!a.transports.empty() && std::find(transports.begin(), transports.end(), a.transports) == transports.end())
      transports.push_back(a.transports);
  }
  r.params["transport"] = fmt::format("{}", fmt::join(transports, ","));
  if (!errors.empty()) {
    r.status = Status::Fail;
    r.message = fmt::format("the all-reduce through the node's HCAs failed: {}", fmt::join(errors, "; "));
    return r;
  }
  const double mean_us = sum_us / n;
  const double algbw = mean_us > 0 ? static_cast<double>(bytes) / (mean_us * 1e-6) / 1e9 : 0;
  r.value = algbw * 2.0 * (n - 1) / n;
  r.status = wrong > 0 ? Status::Fail : Status::Pass;
  r.message = wrong > 0 ? fmt::format("{} wrong elements in the all-reduce through the node's HCAs", wrong)
                        : fmt::format("all_reduce float {} on {} GPUs with NCCL's P2P and SHM off ({}): busbw {:.1f} GB/s, "
                                      "the ports nearest the GPUs carry {:.0f} Gb/s ({:.1f} GB/s: {})",
                                      format_bytes(static_cast<double>(bytes)), n,
                                      transports.empty() ? "transport not observed" : r.params["transport"], r.value,
                                      line_rate.gbps, line_rate.gbps / 8, line_rate.ports);
  return r;
}

}  // namespace gpuaccept::nccl_scaling
