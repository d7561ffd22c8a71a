#include "smoke/binding_checks.h"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/host_inventory.h"
#include "slurm/gres.h"
#include "smoke/cpu_set.h"

namespace gpuaccept::smoke {

namespace {

// Ranks grouped by host, hosts in order of their lowest rank.
std::vector<std::pair<std::string, std::vector<const RankFacts*>>> by_host(const std::vector<RankFacts>& all) {
  std::vector<std::pair<std::string, std::vector<const RankFacts*>>> out;
  for (const auto& f : all) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == f.host; });
    if (it == out.end()) it = out.insert(out.end(), {f.host, {}});
    it->second.push_back(&f);
  }
  return out;
}

std::string join_ranks(const std::vector<int>& ranks) {
  if (ranks.size() == 2) return fmt::format("ranks {} and {}", ranks[0], ranks[1]);
  return fmt::format("ranks {}", fmt::join(ranks, ", "));
}

}  // namespace

std::vector<Record> check_gpu_sharing(const std::vector<RankFacts>& all, bool allow_shared) {
  std::vector<Record> out;
  for (const auto& [host, ranks] : by_host(all)) {
    Record r = node_record(host, "binding_gpu_unique");
    std::map<std::string, std::vector<int>> users;  // GPU UUID -> ranks using it
    for (const RankFacts* f : ranks)
      if (!f->gpu_uuid.empty()) users[f->gpu_uuid].push_back(f->rank);
    if (users.empty()) {
      r.status = Status::Skip;
      r.message = fmt::format("no rank on {} uses a GPU: {}", host,
                              ranks.front()->gpu_reason.empty() ? "none visible" : ranks.front()->gpu_reason);
      out.push_back(std::move(r));
      continue;
    }
    std::vector<std::string> shared;
    for (const auto& [uuid, rs] : users)
      if (rs.size() > 1) shared.push_back(fmt::format("{} share GPU {}", join_ranks(rs), uuid));
    if (shared.empty()) {
      r.message = fmt::format("{} ranks on {} use {} distinct GPUs", ranks.size(), host, users.size());
    } else {
      r.status = allow_shared ? Status::Pass : Status::Fail;
      r.message = fmt::format("on {}: {}{}", host, fmt::join(shared, "; "),
                              allow_shared ? " (allowed: smoke.allow_shared_gpus=true)" : "");
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<Record> check_cpu_overlap(const std::vector<RankFacts>& all, bool require_exclusive) {
  std::vector<Record> out;
  for (const auto& [host, ranks] : by_host(all)) {
    Record r = node_record(host, "binding_cpu_exclusive");
    if (ranks.size() < 2) {
      r.message = fmt::format("one rank on {} (CPUs {}): nothing to overlap", host, ranks.front()->cpus);
      out.push_back(std::move(r));
      continue;
    }
    std::vector<std::string> overlaps;
    for (std::size_t a = 0; a < ranks.size(); ++a) {
      for (std::size_t b = a + 1; b < ranks.size(); ++b) {
        const auto sa = parse_cpu_list(ranks[a]->cpus).value_or(CpuSet{});
        const auto sb = parse_cpu_list(ranks[b]->cpus).value_or(CpuSet{});
        const CpuSet both = cpu_intersection(sa, sb);
        if (!both.empty())
          overlaps.push_back(fmt::format("ranks {} and {} share CPUs {}", ranks[a]->rank, ranks[b]->rank,
                                         format_cpu_list(both)));
      }
    }
    if (overlaps.empty()) {
      r.message = fmt::format("{} ranks on {} have disjoint CPU sets", ranks.size(), host);
    } else if (require_exclusive) {
      r.status = Status::Fail;
      r.message = fmt::format("on {}: {} (no CPU binding? check TaskPlugin=task/affinity or srun --cpu-bind)", host,
                              fmt::join(overlaps, "; "));
    } else {
      r.status = Status::Skip;
      r.message = fmt::format("on {}: {}; not required (smoke.require_exclusive_cpus=false)", host,
                              fmt::join(overlaps, "; "));
    }
    out.push_back(std::move(r));
  }
  return out;
}

Record check_gpu_count(const RankFacts& mine, const SlurmEnv& env, const std::string& gpu_bind) {
  Record r;
  r.test = "binding_gpu_count";
  r.metric = "gpus";
  r.unit = "count";
  r.value = mine.cuda_visible;
  const std::string why = mine.gpu_reason.empty() ? "" : ": " + mine.gpu_reason;
  if (!env.in_job()) {
    r.status = Status::Skip;
    r.message = fmt::format("not in a Slurm job; this rank sees {} GPUs{}", mine.cuda_visible, why);
    return r;
  }
  int expected = -1;
  std::string source;
  if (const int n = gpu_request_count(env.gpus_per_task); n >= 0) {
    expected = n;
    source = "SLURM_GPUS_PER_TASK=" + env.gpus_per_task;
  } else if (!env.step_gpus.empty()) {
    expected = count_index_list(env.step_gpus);
    source = "SLURM_STEP_GPUS=" + env.step_gpus;
  } else if (const int n2 = slurm_gpus_on_node(env); n2 >= 0) {
    expected = n2;
    source = env.gpus_on_node.empty() ? "SLURM_JOB_GPUS=" + env.job_gpus : "SLURM_GPUS_ON_NODE=" + env.gpus_on_node;
  }
  if (expected < 0) {
    r.status = mine.cuda_visible == 0 ? Status::Skip : Status::Pass;
    r.message = mine.cuda_visible == 0
                    ? fmt::format("Slurm gave this task no GPUs and it sees none{}", why)
                    : fmt::format("this rank sees {} GPUs; Slurm set no GPU count to compare with", mine.cuda_visible);
    return r;
  }
  r.params = {{"expected", std::to_string(expected)}, {"source", source}};
  const bool per_task_bind = !gpu_bind.empty() && gpu_bind != "none" && source.starts_with("SLURM_STEP_GPUS");
  if (per_task_bind) {
    // --gpu-bind splits the step's GPUs among the tasks: each sees some, never more.
    r.status = mine.cuda_visible >= 1 && mine.cuda_visible <= expected ? Status::Pass : Status::Fail;
    r.message = fmt::format("this rank sees {} of the step's {} GPUs ({}, SLURM_GPU_BIND={}){}", mine.cuda_visible,
                            expected, source, gpu_bind, why);
    return r;
  }
  r.status = mine.cuda_visible == expected ? Status::Pass : Status::Fail;
  r.message = fmt::format("this rank sees {} GPUs, Slurm gave it {} ({}){}", mine.cuda_visible, expected, source,
                          r.status == Status::Fail ? why : "");
  return r;
}

Record check_numa_affinity(const RankFacts& mine, bool require) {
  Record r;
  r.test = "binding_numa";
  r.gpu_index = mine.gpu_index;
  r.gpu_uuid = mine.gpu_uuid;
  if (mine.gpu_index < 0) {
    r.status = Status::Skip;
    r.message = "no GPU: " + (mine.gpu_reason.empty() ? std::string("none visible") : mine.gpu_reason);
    return r;
  }
  const auto numa_cpus = parse_cpu_list(mine.gpu_numa_cpus);
  if (!mine.gpu_numa || !numa_cpus || numa_cpus->empty()) {
    r.status = Status::Skip;
    r.message = fmt::format("the NUMA node of GPU {} is unknown (NVML and sysfs do not say, or hwloc has no cpuset)",
                            mine.gpu_bus_id);
    return r;
  }
  r.params = {{"numa_node", std::to_string(*mine.gpu_numa)}};
  const auto cpus = parse_cpu_list(mine.cpus).value_or(CpuSet{});
  if (!cpus.empty() && cpu_subset(cpus, *numa_cpus)) {
    r.message = fmt::format("CPUs {} are on NUMA node {} of the GPU (CPUs {})", mine.cpus, *mine.gpu_numa,
                            mine.gpu_numa_cpus);
    return r;
  }
  r.status = require ? Status::Fail : Status::Pass;
  r.message = fmt::format("CPUs {} are not all on NUMA node {} of the GPU (CPUs {}){}", mine.cpus, *mine.gpu_numa,
                          mine.gpu_numa_cpus,
                          require ? "" : "; not required (smoke.require_numa_affinity=false)");
  return r;
}

}  // namespace gpuaccept::smoke
