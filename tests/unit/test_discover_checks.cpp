#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "discover/inventory_table.h"
#include "discover/node_checks.h"
#include "hw/gpu_inventory.h"

using namespace gpuaccept;
using nlohmann::json;

namespace {

// An inventory as collect_rank_inventory() writes it, with only what the checks read.
json inventory(int rank, const std::string& host, int gpus, const std::string& model = "NVIDIA H200",
               const std::string& driver = "580.159.04", const std::string& nccl = "2.28.3", int gres = -1) {
  json node_gpus = json::array();
  for (int i = 0; i < gpus; ++i)
    node_gpus.push_back({{"nvml_index", i}, {"name", model}, {"uuid", "GPU-" + host + "-" + std::to_string(i)},
                         {"pci_bus_id", "00000000:0" + std::to_string(i) + ":00.0"}, {"memory_bytes", 150ULL << 30},
                         {"compute_capability", "9.0"}, {"ecc_enabled", true}, {"mig_enabled", false},
                         {"numa_node", 0}, {"nvlinks", json::array()}});
  json visible = json::array();
  if (gpus > 0) visible.push_back(node_gpus[rank % gpus]);
  return {{"rank", rank},
          {"local_rank", 0},
          {"host", host},
          {"cpu_affinity", "0-1"},
          {"slurm", {{"gres_gpus_on_node", gres}, {"cuda_visible_devices", ""}, {"job_gpus", ""}}},
          {"cpu", {{"model", "cpu"}, {"sockets", 1}, {"cores", 2}, {"numa_nodes", 1}, {"memory_bytes", 1ULL << 30}}},
          {"gpus",
           {{"reason", gpus ? "" : "NVML not loadable: libnvidia-ml.so.1"},
            {"driver_version", gpus ? driver : ""},
            {"cuda_driver_version", gpus ? "13.0" : ""},
            {"cuda_runtime_version", "13.0"},
            {"visible", visible},
            {"node_gpus", node_gpus},
            {"nvlink_matrix", json::array()},
            {"pcie_matrix", json::array()}}},
          {"infiniband", json::array()},
          {"versions", {{"nccl", nccl}, {"pmix", "4.2.2"}, {"slurm", "22.05.8"}, {"slurm_api", "38.0.0"}}}};
}

const Record& find(const std::vector<Record>& rs, const std::string& attribute) {
  for (const auto& r : rs)
    if (r.params.count("attribute") && r.params.at("attribute") == attribute) return r;
  FAIL("no record for " << attribute);
  return rs.front();
}

}  // namespace

TEST_CASE("expected GPUs per node from the config", "[discover]") {
  const std::vector<json> invs = {inventory(0, "n1", 8), inventory(1, "n1", 8), inventory(2, "n2", 6)};
  const auto rs = discover::check_gpus_per_node(invs, 8);
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].node == "n1");
  CHECK(rs[0].status == Status::Pass);
  CHECK(rs[0].value == 8);
  CHECK(rs[1].node == "n2");
  CHECK(rs[1].status == Status::Fail);
  CHECK_THAT(rs[1].message, Catch::Contains("6 GPUs present, 8 expected"));
}

TEST_CASE("expected GPUs per node from the job's GRES", "[discover]") {
  // Two ranks on n1 with GRES 2 see two distinct GPUs; n2's single rank sees one of 2.
  const std::vector<json> invs = {inventory(0, "n1", 4, "NVIDIA H200", "580", "2.28.3", 2),
                                  inventory(1, "n1", 4, "NVIDIA H200", "580", "2.28.3", 2),
                                  inventory(2, "n2", 4, "NVIDIA H200", "580", "2.28.3", 2)};
  const auto rs = discover::check_gpus_per_node(invs, std::nullopt);
  CHECK(rs[0].status == Status::Pass);
  CHECK(rs[1].status == Status::Fail);
  CHECK_THAT(rs[1].message, Catch::Contains("Slurm allocated 2"));
}

TEST_CASE("a node whose GPUs are unusable fails gpus_per_node and is blamed for it", "[discover]") {
  // Issue 39: a batch job given one GPU (SLURM_GPUS_ON_NODE=1) on a node where NVML does not
  // load. Rank 0 writes the record (rank -1) about that node: the node is named, so the
  // report's node actions drain it (results/record.h, blames_node).
  const std::vector<json> invs = {inventory(0, "gpu07", 0, "", "", "2.28.3", 1), inventory(1, "gpu08", 8, "NVIDIA H200",
                                                                                          "580.159.04", "2.28.3", 1)};
  const auto rs = discover::check_gpus_per_node(invs, std::nullopt);
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].status == Status::Fail);
  CHECK(rs[0].rank == kJobLevel);
  CHECK(rs[0].node == "gpu07");
  CHECK(blames_node(rs[0]));
  CHECK_THAT(rs[0].message, Catch::Contains("0 GPUs visible to the job's ranks, Slurm allocated 1") &&
                                Catch::Contains("NVML not loadable"));
  CHECK(rs[1].status == Status::Pass);
  CHECK(rs[1].node == "gpu08");
  // Nodes not alike is about the job: the odd node is named in the message, but no node is
  // blamed (which of two differing nodes is wrong is not known).
  for (const auto& r : discover::check_nodes_alike(invs)) {
    CHECK(r.node.empty());
    CHECK_FALSE(blames_node(r));
  }
}

TEST_CASE("no GPU and no expectation is a SKIP with the reason, never a PASS", "[discover]") {
  const auto rs = discover::check_gpus_per_node({inventory(0, "n1", 0), inventory(1, "n2", 0)}, std::nullopt);
  for (const auto& r : rs) {
    CHECK(r.status == Status::Skip);
    CHECK_THAT(r.message, Catch::Contains("NVML not loadable"));
  }
  // An explicit expectation turns a node without GPUs into a FAIL.
  CHECK(discover::check_gpus_per_node({inventory(0, "n1", 0)}, 8)[0].status == Status::Fail);
}

TEST_CASE("nodes alike: the odd node is named", "[discover]") {
  const std::vector<json> invs = {inventory(0, "n1", 8), inventory(1, "n2", 8),
                                  inventory(2, "n3", 8, "NVIDIA H200", "570.1"), inventory(3, "n4", 8)};
  const auto rs = discover::check_nodes_alike(invs);
  CHECK(find(rs, "gpu_model").status == Status::Pass);
  CHECK(find(rs, "nccl_version").status == Status::Pass);
  const Record& driver = find(rs, "driver_version");
  CHECK(driver.status == Status::Fail);
  CHECK_THAT(driver.message, Catch::Contains("n3 has '570.1'") && Catch::Contains("3 nodes have '580.159.04'"));
}

TEST_CASE("nodes alike without GPUs or with one node: SKIP with the reason", "[discover]") {
  const auto no_gpu = discover::check_nodes_alike({inventory(0, "n1", 0), inventory(1, "n2", 0)});
  CHECK(find(no_gpu, "gpu_model").status == Status::Skip);
  CHECK(find(no_gpu, "nccl_version").status == Status::Pass);  // libraries still compared
  const auto one = discover::check_nodes_alike({inventory(0, "n1", 8), inventory(1, "n1", 8)});
  for (const auto& r : one) CHECK(r.status == Status::Skip);
}

TEST_CASE("the job-log tables show every rank and node", "[discover]") {
  const std::string t = discover::format_inventory_tables({inventory(0, "n1", 2), inventory(1, "n2", 0)});
  CHECK_THAT(t, Catch::Contains("n1") && Catch::Contains("n2: no GPUs") && Catch::Contains("NVIDIA H200"));
}

TEST_CASE("rank records: visible GPU count and one record per GPU", "[discover]") {
  const auto rs = discover::rank_records(inventory(1, "n1", 4));
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].test == "visible_gpus");
  CHECK(rs[0].value == 1);
  CHECK(rs[1].test == "gpu");
  CHECK(rs[1].gpu_uuid == "GPU-n1-1");
  CHECK(rs[1].value == Approx(150.0));
  const auto none = discover::rank_records(inventory(0, "n1", 0));
  REQUIRE(none.size() == 1);
  CHECK(none[0].value == 0);
  CHECK_THAT(none[0].message, Catch::Contains("NVML"));
}

TEST_CASE("a GPU's form factor from what NVML reports", "[discover]") {
  CHECK(gpu_form_factor("NVIDIA H100 PCIe", 0) == "PCIe");
  CHECK(gpu_form_factor("NVIDIA H200 NVL", std::nullopt) == "NVL");
  CHECK(gpu_form_factor("NVIDIA A100-SXM4-80GB", std::nullopt) == "SXM");
  CHECK(gpu_form_factor("NVIDIA H100 80GB HBM3", 3) == "SXM");   // a module on an HGX baseboard
  CHECK(gpu_form_factor("NVIDIA H100 80GB HBM3", 0) == "PCIe");  // a product without a baseboard
  CHECK(gpu_form_factor("NVIDIA H200", std::nullopt).empty());     // NVML did not say: unknown
}
