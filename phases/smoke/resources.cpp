#include "smoke/resources.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/progress.h"
#include "slurm/gres.h"

namespace gpuaccept::smoke {
namespace fs = std::filesystem;

namespace {

std::optional<std::uint64_t> to_u64(const std::string& s) {
  try {
    std::size_t used = 0;
    const unsigned long long v = std::stoull(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string first_word(const std::string& s) {
  std::istringstream in(s);
  std::string w;
  in >> w;
  return w;
}

constexpr std::uint64_t kMiB = 1024ull * 1024;

}  // namespace

Record check_cpus_per_task(const SlurmEnv& env, int allowed_cpus, const std::string& cpu_list) {
  Record r;
  r.test = "slurm_cpus_per_task";
  r.metric = "cpus";
  r.unit = "count";
  r.value = allowed_cpus;
  if (!env.in_job()) {
    r.status = Status::Skip;
    r.message = "not in a Slurm job";
    return r;
  }
  const auto want = to_u64(env.cpus_per_task);
  if (!want) {
    r.status = Status::Skip;
    r.message = fmt::format("no --cpus-per-task requested (SLURM_CPUS_PER_TASK unset); this rank may use CPUs {}",
                            cpu_list);
    return r;
  }
  r.params = {{"expected", env.cpus_per_task}};
  if (static_cast<std::uint64_t>(allowed_cpus) < *want) {
    r.status = Status::Fail;
    r.message = fmt::format("this rank may use {} CPUs ({}), the task asked for {}", allowed_cpus, cpu_list, *want);
  } else {
    r.message = fmt::format("this rank may use {} CPUs ({}), asked for {}{}", allowed_cpus, cpu_list, *want,
                            static_cast<std::uint64_t>(allowed_cpus) > *want ? " (not bound to exactly its CPUs)" : "");
  }
  return r;
}

std::optional<MemoryRequest> requested_memory(const EnvLookup& env) {
  auto get = [&](const char* n) {
    const char* v = env(n);
    return v ? std::string(v) : std::string();
  };
  if (const auto mb = to_u64(get("SLURM_MEM_PER_NODE")))
    return MemoryRequest{*mb * kMiB, "SLURM_MEM_PER_NODE=" + get("SLURM_MEM_PER_NODE")};
  const auto per_cpu = to_u64(get("SLURM_MEM_PER_CPU"));
  const auto cpus = to_u64(get("SLURM_CPUS_ON_NODE"));
  if (per_cpu && cpus)
    return MemoryRequest{*per_cpu * *cpus * kMiB, fmt::format("SLURM_MEM_PER_CPU={} x SLURM_CPUS_ON_NODE={}",
                                                              *per_cpu, *cpus)};
  const auto per_gpu = to_u64(get("SLURM_MEM_PER_GPU"));
  const int gpus = gpu_request_count(get("SLURM_GPUS_ON_NODE"));
  if (per_gpu && gpus > 0)
    return MemoryRequest{*per_gpu * static_cast<std::uint64_t>(gpus) * kMiB,
                         fmt::format("SLURM_MEM_PER_GPU={} x SLURM_GPUS_ON_NODE={}", *per_gpu, gpus)};
  return std::nullopt;
}

std::string cgroup_v2_path(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("0::")) return line.substr(3);
  return "";
}

std::string cgroup_v1_memory_path(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::istringstream controllers(line.substr(a + 1, b - a - 1));
    std::string c;
    while (std::getline(controllers, c, ','))
      if (c == "memory") return line.substr(b + 1);
  }
  return "";
}

MemoryAvailable available_memory() {
  MemoryAvailable m;
  m.physical_bytes = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const std::string self = slurp("/proc/self/cgroup");
  // Slurm limits the job or step cgroup, the task's own may say "max": walk up to the root.
  auto walk = [&](const fs::path& root, const std::string& rel, const char* file) {
    for (fs::path p = root / fs::path(rel).relative_path();; p = p.parent_path()) {
      const std::string v = first_word(slurp(p / file));
      if (const auto bytes = to_u64(v); bytes && (!m.cgroup_bytes || *bytes < *m.cgroup_bytes)) {
        m.cgroup_bytes = bytes;
        m.cgroup_file = (p / file).string();
      }
      if (p == root || !p.has_relative_path()) break;
    }
  };
  if (const std::string v2 = cgroup_v2_path(self); !v2.empty()) walk("/sys/fs/cgroup", v2, "memory.max");
  if (const std::string v1 = cgroup_v1_memory_path(self); !v1.empty())
    walk("/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes");
  // v1 reports "no limit" as a huge number: not a limit.
  if (m.cgroup_bytes && *m.cgroup_bytes >= m.physical_bytes) m.cgroup_bytes.reset();
  return m;
}

Record check_memory(const std::optional<MemoryRequest>& req, const MemoryAvailable& avail, bool in_job) {
  Record r;
  r.test = "slurm_memory";
  r.metric = "memory";
  r.unit = "GB";
  const std::uint64_t usable = std::min(avail.physical_bytes, avail.cgroup_bytes.value_or(avail.physical_bytes));
  r.value = static_cast<double>(usable) / 1e9;
  const std::string where = avail.cgroup_bytes
                                ? fmt::format("cgroup limit {} ({})", format_bytes(static_cast<double>(*avail.cgroup_bytes)),
                                              avail.cgroup_file)
                                : fmt::format("no cgroup memory limit, node has {}",
                                              format_bytes(static_cast<double>(avail.physical_bytes)));
  if (!in_job || !req) {
    r.status = Status::Skip;
    r.message = in_job ? "no memory request in the environment (SLURM_MEM_PER_NODE/CPU/GPU unset); " + where
                       : "not in a Slurm job";
    return r;
  }
  r.params = {{"expected_bytes", std::to_string(req->bytes)}, {"source", req->source}};
  // Slurm rounds to MiB; allow 1% for the kernel's own accounting.
  if (static_cast<double>(usable) < 0.99 * static_cast<double>(req->bytes)) {
    r.status = Status::Fail;
    r.message = fmt::format("the job asked for {} ({}) but may use {}: {}", format_bytes(static_cast<double>(req->bytes)),
                            req->source, format_bytes(static_cast<double>(usable)), where);
  } else {
    r.message = fmt::format("asked for {} ({}); {}", format_bytes(static_cast<double>(req->bytes)), req->source, where);
  }
  return r;
}

}  // namespace gpuaccept::smoke
