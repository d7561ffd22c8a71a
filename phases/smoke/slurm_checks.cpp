#include "smoke/slurm_checks.h"

#include <algorithm>

#include <fmt/format.h>
#include <slurm/slurm.h>

#include "common/error.h"
#include "slurm/gres.h"

namespace gpuaccept::smoke {

namespace {

Record skipped(const std::string& test, const std::string& why) {
  Record r = job_record(test);
  r.status = Status::Skip;
  r.message = why;
  return r;
}

// The Slurm node name each World host runs as, with the facts of its first rank.
std::vector<const RankFacts*> first_rank_per_node(const std::vector<RankFacts>& all) {
  std::vector<const RankFacts*> out;
  for (const auto& f : all)
    if (std::none_of(out.begin(), out.end(), [&](const RankFacts* o) { return o->host == f.host; }))
      out.push_back(&f);
  return out;
}

}  // namespace

Record evaluate_node_state(const SlurmNode& node) {
  Record r = node_record(node.name, "slurm_nodes");
  const std::string problem = node_state_problem(node.state);
  r.params = {{"state", node_state_name(node.state)}};
  if (problem.empty()) {
    r.message = fmt::format("{} is {}", node.name, node_state_name(node.state));
  } else {
    r.status = Status::Fail;
    r.message = fmt::format("{}: {} ({}){}", node.name, problem, node_state_name(node.state),
                            node.reason.empty() ? "" : ", reason: " + node.reason);
  }
  return r;
}

Record evaluate_partition(const std::string& name, const std::optional<SlurmPartition>& p) {
  Record r = job_record("slurm_partition");
  r.params = {{"partition", name}};
  if (!p) {
    r.status = Status::Fail;
    r.message = fmt::format("partition '{}' (SLURM_JOB_PARTITION) is not known to the controller", name);
  } else if (p->state_up != PARTITION_UP) {
    r.status = Status::Fail;
    r.message = fmt::format("partition '{}' is {}", name, partition_state_name(p->state_up));
  } else {
    r.message = fmt::format("partition '{}' is UP", name);
  }
  return r;
}

Record evaluate_gres(const std::string& node, const std::string& gres, int nvml_gpus, const std::string& nvml_reason) {
  Record r = node_record(node, "slurm_gres");
  r.metric = "gpus";
  r.unit = "count";
  r.value = nvml_gpus;
  const int configured = gres_gpu_count(gres);
  r.params = {{"expected", std::to_string(configured)}, {"gres", gres}};
  const std::string why = nvml_reason.empty() ? "" : ": " + nvml_reason;
  if (configured == 0 && nvml_gpus == 0) {
    r.status = Status::Skip;
    r.message = fmt::format("{} has no GPU GRES configured and no GPU{}", node, why);
  } else if (configured == nvml_gpus) {
    r.message = fmt::format("{}: GRES '{}' configures {} GPUs, NVML sees {}", node, gres, configured, nvml_gpus);
  } else {
    r.status = Status::Fail;
    r.message = fmt::format("{}: GRES '{}' configures {} GPUs but NVML sees {}{}", node,
                            gres.empty() ? "(none)" : gres, configured, nvml_gpus, why);
  }
  return r;
}

std::vector<Record> controller_checks(const SlurmEnv& env, const std::vector<RankFacts>& all) {
  const char* tests[] = {"slurm_controller", "slurm_partition", "slurm_nodes", "slurm_gres"};
  std::vector<Record> out;
  if (!env.in_job()) {
    for (const char* t : tests) out.push_back(skipped(t, "not in a Slurm job"));
    return out;
  }

  Record ctl = job_record("slurm_controller");
  try {
    const std::string error = slurm_ping_controller();
    ctl.status = error.empty() ? Status::Pass : Status::Fail;
    ctl.message = error.empty() ? "slurmctld answered slurm_ping" : "slurmctld does not answer: " + error;
  } catch (const CallError& e) {
    ctl.status = Status::Fail;
    ctl.message = e.what();
  }
  out.push_back(ctl);
  if (ctl.status != Status::Pass) {
    for (const char* t : tests)
      if (std::string(t) != "slurm_controller") out.push_back(skipped(t, "the controller did not answer"));
    return out;
  }

  try {
    out.push_back(evaluate_partition(env.partition, find_partition(slurm_partitions(), env.partition)));
  } catch (const CallError& e) {
    Record r = job_record("slurm_partition");
    r.status = Status::Fail;
    r.message = e.what();
    out.push_back(r);
  }

  try {
    const auto names = expand_hostlist(env.nodelist);
    // One RPC for the allocation plus the nodes ranks run on (same set unless the
    // step runs on a subset or SLURMD_NODENAME differs from the list).
    auto wanted = names;
    for (const RankFacts* f : first_rank_per_node(all))
      if (std::find(wanted.begin(), wanted.end(), f->slurm_node) == wanted.end()) wanted.push_back(f->slurm_node);
    const auto nodes = slurm_nodes(wanted);
    for (const auto& n : nodes)
      if (std::find(names.begin(), names.end(), n.name) != names.end()) out.push_back(evaluate_node_state(n));
    for (const RankFacts* f : first_rank_per_node(all)) {
      const auto it = std::find_if(nodes.begin(), nodes.end(), [&](const SlurmNode& n) { return n.name == f->slurm_node; });
      out.push_back(evaluate_gres(f->slurm_node, it == nodes.end() ? "" : it->gres, f->nvml_gpus, f->nvml_reason));
    }
  } catch (const CallError& e) {
    for (const char* t : {"slurm_nodes", "slurm_gres"}) {
      Record r = job_record(t);
      r.status = Status::Fail;
      r.message = e.what();
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace gpuaccept::smoke
