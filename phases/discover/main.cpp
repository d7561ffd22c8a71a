// gpuaccept-discover: what every node, GPU, link and port is, and whether the nodes
// match what the job expects. Run one rank per GPU with `srun --mpi=pmix`.
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "discover/inventory.h"
#include "discover/inventory_table.h"
#include "discover/node_checks.h"
#include "phase/phase_runner.h"
#include "common/json_text.h"

using namespace gpuaccept;

namespace {

void run(PhaseContext& ctx) {
  ctx.config.refuse_unknown_keys("discover", {"expected_gpus_per_node"});
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
