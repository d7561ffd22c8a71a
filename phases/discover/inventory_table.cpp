#include "discover/inventory_table.h"

#include <set>

#include <fmt/format.h>

namespace gpuaccept::discover {
using nlohmann::json;

namespace {

std::string yes_no(const json& v) {
  if (v.is_null()) return "n/a";
  return v.get<bool>() ? "on" : "off";
}

void rank_table(std::string& out, const std::vector<json>& invs) {
  out += fmt::format("{:>4} {:<16} {:>5} {:>4} {:<12} {:<10} {:<12} {}\n", "rank", "host", "local", "gpus",
                     "CUDA_VISIBLE", "slurm_gpus", "affinity", "cpu");
  for (const auto& i : invs) {
    const auto& s = i.at("slurm");
    const auto& c = i.at("cpu");
    out += fmt::format("{:>4} {:<16} {:>5} {:>4} {:<12} {:<10} {:<12} {} ({} sockets, {} cores, {} NUMA, {:.0f} GiB)\n",
                       i.at("rank").get<int>(), i.value("host", ""), i.at("local_rank").get<int>(),
                       i.at("gpus").at("visible").size(), s.value("cuda_visible_devices", "-"),
                       s.value("job_gpus", "-"), i.value("cpu_affinity", ""), c.value("model", "?"),
                       c.value("sockets", 0), c.value("cores", 0), c.value("numa_nodes", 0),
                       c.value("memory_bytes", 0ULL) / 1073741824.0);
  }
}

void node_tables(std::string& out, const json& inv) {
  const auto& g = inv.at("gpus");
  const std::string host = inv.value("host", "");
  if (g.at("node_gpus").empty()) {
    out += fmt::format("\n{}: no GPUs ({})\n", host, g.value("reason", ""));
  } else {
    out += fmt::format("\n{}: driver {}, CUDA {} (runtime {})\n", host, g.value("driver_version", ""),
                       g.value("cuda_driver_version", ""), g.value("cuda_runtime_version", ""));
    out += fmt::format("{:>3} {:<26} {:<42} {:<17} {:>8} {:>3} {:>4} {:>4} {:>4} {:>7}\n", "gpu", "name", "uuid",
                       "pci", "mem GiB", "cc", "ecc", "mig", "numa", "nvlinks");
    for (const auto& d : g.at("node_gpus")) {
      int active = 0;
      for (const auto& l : d.at("nvlinks")) active += l.at("active").get<bool>() ? 1 : 0;
      out += fmt::format("{:>3} {:<26} {:<42} {:<17} {:>8.1f} {:>3} {:>4} {:>4} {:>4} {:>7}\n",
                         d.at("nvml_index").get<int>(), d.value("name", ""), d.value("uuid", ""),
                         d.value("pci_bus_id", ""), d.value("memory_bytes", 0ULL) / 1073741824.0,
                         d.value("compute_capability", ""), yes_no(d.at("ecc_enabled")), yes_no(d.at("mig_enabled")),
                         d.at("numa_node").is_null() ? std::string("-") : std::to_string(d.at("numa_node").get<int>()),
                         fmt::format("{}/{}", active, d.at("nvlinks").size()));
    }
    // NV<n>: n NVLinks between the pair; otherwise the PCIe path.
    const auto& nv = g.at("nvlink_matrix");
    const auto& pcie = g.at("pcie_matrix");
    out += "links";
    for (std::size_t j = 0; j < nv.size(); ++j) out += fmt::format(" {:>5}", fmt::format("GPU{}", j));
    out += "\n";
    for (std::size_t i = 0; i < nv.size(); ++i) {
      out += fmt::format("{:<5}", fmt::format("GPU{}", i));
      for (std::size_t j = 0; j < nv.size(); ++j) {
        const int n = nv[i][j].get<int>();
        out += fmt::format(" {:>5}", i == j ? "X" : n > 0 ? fmt::format("NV{}", n) : pcie[i][j].get<std::string>());
      }
      out += "\n";
    }
  }
  for (const auto& p : inv.at("infiniband"))
    out += fmt::format("{} port {}: {} ({}), {}, {}\n", p.value("device", ""), p.value("port", 0), p.value("state", ""),
                       p.value("phys_state", ""), p.value("rate", ""), p.value("link_layer", ""));
  if (inv.at("infiniband").empty()) out += fmt::format("{}: no InfiniBand/RoCE devices\n", host);
}

}  // namespace

std::string format_inventory_tables(const std::vector<json>& inventories) {
  std::string out;
  rank_table(out, inventories);
  std::set<std::string> seen;
  for (const auto& inv : inventories)
    if (seen.insert(inv.value("host", "")).second) node_tables(out, inv);
  const auto& v = inventories.front().at("versions");
  out += fmt::format("\nversions: NCCL {}, PMIx {}, Slurm {} (API {}), World {}\n", v.value("nccl", ""),
                     v.value("pmix", ""), v.value("slurm", ""), v.value("slurm_api", ""), v.value("world_backend", ""));
  return out;
}

}  // namespace gpuaccept::discover
