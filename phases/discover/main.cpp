// gpuaccept-discover: what every node, GPU, link and port is, and whether the nodes
// match what the job expects. Run one rank per GPU with `srun --mpi=pmix`.
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/log.h"
#include "discover/inventory.h"
#include "config/fabric_config.h"
#include "discover/fabric_checks.h"
#include "discover/inventory_table.h"
#include "discover/node_checks.h"
#include "discover/version_checks.h"
#include "phase/phase_runner.h"
#include "slurm/slurm_api.h"
#include "slurm/slurm_env.h"
#include "common/json_text.h"

using namespace gpuaccept;

namespace {

// slurmctld's version, asked once by rank 0. Not under Slurm (no slurm.conf to read) it is
// not asked; a refusal is kept with libslurm's reason (a client release it does not accept).
discover::ControllerAnswer ask_controller() {
  discover::ControllerAnswer a;
  if (!SlurmEnv::from_process().in_job()) {
    a.why_unknown = "not in a Slurm job";
    return a;
  }
  try {
    a.version = slurm_controller_version();
  } catch (const CallError& e) {
    if (e.call() == "slurm_init") a.why_unknown = e.detail();  // no readable slurm.conf
    else a.refused = e.detail();
  }
  return a;
}

void run(PhaseContext& ctx) {
  ctx.config.refuse_unknown_keys("discover", {"expected_gpus_per_node"});
  const FabricConfig fabric = read_fabric_config(ctx.config);
  const nlohmann::json mine = discover::collect_rank_inventory(ctx.world);
  ctx.results.set_document("inventory", json_text(mine));
  for (auto& r : discover::rank_records(mine)) ctx.results.add(std::move(r));
  ctx.results.checkpoint();

  std::vector<nlohmann::json> all;
  for (const auto& text : ctx.world.allgather_string(json_text(mine))) all.push_back(nlohmann::json::parse(text));
  if (ctx.world.rank() != 0) return;

  log_rank0("inventory of {} ranks:\n{}", all.size(), discover::format_inventory_tables(all));
  const auto expected = ctx.config.get_optional<int>("discover.expected_gpus_per_node");
  for (auto& r : discover::check_gpus_per_node(all, expected)) ctx.results.add(std::move(r));
  for (auto& r : discover::check_nodes_alike(all)) ctx.results.add(std::move(r));
  for (auto& r : discover::check_library_versions(all)) ctx.results.add(std::move(r));
  for (auto& r : discover::check_fabric(all, fabric)) ctx.results.add(std::move(r));
  ctx.results.add(discover::check_slurm_client(slurm_version_compiled(), ask_controller()));
  for (const auto& r : ctx.results.records())
    log_rank0("{:<5} {:<14} {:<16} {}", to_string(r.status), r.test, r.node, r.message);
}

}  // namespace

int main(int argc, char** argv) {
  return run_phase(argc, argv,
                   {.name = "discover",
                    .description = "Inventory of nodes, GPUs, links and ports; checks GPUs per node and that nodes match.",
                    .body = run});
}
