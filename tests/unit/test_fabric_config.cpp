// The `fabric:` section (config/fabric_config.h): defaults, each key, and the errors that name
// file, line and key.
#include <catch2/catch.hpp>

#include "config/fabric_config.h"

using namespace gpuaccept;

TEST_CASE("fabric config: defaults, tcp on purpose, counts and rates, and what it refuses", "[fabric]") {
  const FabricConfig d = read_fabric_config(Config{});
  CHECK_FALSE(d.tcp);
  CHECK_FALSE(d.ports_per_node);
  CHECK_FALSE(d.min_rate_gbps);
  CHECK(d.require_gpudirect);
  CHECK(d.reference_port_gbps == 400);
  const FabricConfig f = read_fabric_config(Config::parse(
      "fabric:\n  transport: tcp\n  ports_per_node: 4\n  min_rate_gbps: 200\n  require_gpudirect: false\n", "f.yaml"));
  CHECK(f.tcp);
  CHECK(f.ports_per_node == 4);
  CHECK(f.min_rate_gbps == 200);
  CHECK_FALSE(f.require_gpudirect);
  CHECK_THROWS_WITH(read_fabric_config(Config::parse("fabric:\n  transport: infiniband\n", "f.yaml")),
                    Catch::Contains("f.yaml:2") && Catch::Contains("fabric.transport") && Catch::Contains("rdma or tcp"));
  CHECK_THROWS_WITH(read_fabric_config(Config::parse("fabric:\n  ports_per_nod: 8\n", "f.yaml")),
                    Catch::Contains("ports_per_nod") && Catch::Contains("ports_per_node"));
  CHECK_THROWS_WITH(read_fabric_config(Config::parse("fabric:\n  min_rate_gbps: 0\n", "f.yaml")),
                    Catch::Contains("fabric.min_rate_gbps") && Catch::Contains("positive"));
}
