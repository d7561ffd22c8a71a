#include "config/fabric_config.h"

namespace gpuaccept {

FabricConfig read_fabric_config(const Config& config) {
  config.refuse_unknown_keys("fabric", {"transport", "ports_per_node", "min_rate_gbps", "require_gpudirect",
                                        "reference_port_gbps"});
  FabricConfig f;
  const std::string transport = config.get<std::string>("fabric.transport", "rdma");
  if (transport != "rdma" && transport != "tcp")
    throw config.error_at(config.find("fabric.transport"), "fabric.transport",
                          "expected rdma or tcp, got '" + transport + "'");
  f.tcp = transport == "tcp";
  if (config.get_optional<int>("fabric.ports_per_node")) f.ports_per_node = config.get_positive<int>("fabric.ports_per_node", 1);
  if (config.get_optional<double>("fabric.min_rate_gbps"))
    f.min_rate_gbps = config.get_positive<double>("fabric.min_rate_gbps", 1);
  f.require_gpudirect = config.get<bool>("fabric.require_gpudirect", true);
  f.reference_port_gbps = config.get_positive<double>("fabric.reference_port_gbps", 400);
  return f;
}

}  // namespace gpuaccept
