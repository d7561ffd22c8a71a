#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "run/node_inventory.h"

using namespace gpuaccept::report;
using nlohmann::json;

namespace {

std::string inventory(const std::string& host, const std::string& driver, int gpus = 2) {
  json names = json::array();
  for (int i = 0; i < gpus; ++i) names.push_back({{"name", "NVIDIA H200"}});
  return json{{"host", host},
              {"kernel", "6.1"},
              {"gpus", {{"driver_version", driver}, {"node_gpus", names}}},
              {"versions", {{"nccl", "2.28.3"}}}}
      .dump();
}

const NodeInventory& node(const InventoryTable& t, const std::string& host) {
  return *std::find_if(t.nodes.begin(), t.nodes.end(), [&](const auto& n) { return n.host == host; });
}

}  // namespace

TEST_CASE("one row per node, however many ranks describe it", "[inventory]") {
  const auto t = inventory_table({inventory("a", "575"), inventory("a", "575"), inventory("b", "575")});
  REQUIRE(t.nodes.size() == 2);
  CHECK(node(t, "a").ranks == 2);
  CHECK(node(t, "a").fields.at("GPUs") == "2 × NVIDIA H200");
  CHECK(t.gpu_names() == std::vector<std::string>(4, "NVIDIA H200"));
}

TEST_CASE("the node that differs from most is marked", "[inventory]") {
  const auto t = inventory_table({inventory("a", "575"), inventory("b", "575"), inventory("c", "570")});
  CHECK(t.majority("driver") == "575");
  CHECK(t.differs(node(t, "c"), "driver"));
  CHECK_FALSE(t.differs(node(t, "a"), "driver"));
  CHECK_FALSE(t.differs(node(t, "c"), "NCCL"));
}

TEST_CASE("with no majority every node of the column is marked", "[inventory]") {
  const auto t = inventory_table({inventory("a", "575"), inventory("b", "570")});
  CHECK(t.majority("driver").empty());
  CHECK(t.differs(node(t, "a"), "driver"));
  CHECK(t.differs(node(t, "b"), "driver"));
}

TEST_CASE("a broken or oddly typed document does not stop the table", "[inventory]") {
  const auto t = inventory_table({"{not json", R"({"host": "x", "gpus": {"node_gpus": 7, "driver_version": 575}})"});
  CHECK(t.problems.size() == 1);
  REQUIRE(t.nodes.size() == 1);
  CHECK(t.nodes[0].fields.at("driver") == "575");
  CHECK(t.nodes[0].gpu_names.empty());
  CHECK(t.nodes[0].fields.at("GPUs") == "none");
}

TEST_CASE("each GPU's form factor and power limit, as NVML reported them, for the floors", "[inventory]") {
  const std::string doc = json{{"host", "a"},
                               {"gpus",
                                {{"node_gpus",
                                  {{{"node_index", 0}, {"name", "NVIDIA H100 80GB HBM3"}, {"form_factor", "SXM"},
                                    {"power_limit_w", 700.0}},
                                   {{"node_index", 1}, {"name", "NVIDIA H100 80GB HBM3"}, {"form_factor", "SXM"},
                                    {"power_limit_w", 500.0}},
                                   {{"nvml_index", 2}, {"name", "NVIDIA H100 80GB HBM3"}}}}}}}  // an older inventory
                              .dump();
  const auto t = inventory_table({doc});
  gpuaccept::Record gpu1;
  gpu1.node = "a";
  gpu1.gpu_index = 1;
  const auto mine = t.gpus.of(gpu1);
  REQUIRE(mine.size() == 1);
  CHECK(mine[0]->form_factor == "SXM");
  CHECK(*mine[0]->power_limit_w == 500);
  gpu1.gpu_index = 2;
  REQUIRE(t.gpus.of(gpu1).size() == 1);
  CHECK_FALSE(t.gpus.of(gpu1)[0]->power_limit_w);  // not reported: the floors will not assume it
  gpu1.gpu_index = -1;
  CHECK(t.gpus.of(gpu1).size() == 3);  // a node's record: every GPU of the node
  CHECK(node(t, "a").fields.at("GPU board") == "1 × ? ? W + 1 × SXM 500 W + 1 × SXM 700 W");
}
