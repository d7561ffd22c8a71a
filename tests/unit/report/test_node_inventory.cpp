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
