// The fabric between nodes as the report shows it (issue 37; docs/fabric.md): per node its
// RDMA ports from discover's inventory and the checks about them, the port error counters
// judged across the run (model/port_counters.h), the transport NCCL used per scale, the
// measured busbw across nodes against the ports' line rate, the 8 B latency, and the
// node-pair matrix. Plain data, built once by build_fabric(); html_fabric.cpp and
// fabric_json.cpp print it.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/level.h"
#include "model/port_counters.h"
#include "results/record.h"
#include "run/loaded_run.h"
#include "thresholds/rule_verdict.h"

namespace gpuaccept::report {

// One RDMA port of a node as discover's inventory describes it (document `inventory`, key
// `infiniband`); fields an older file lacks stay empty.
struct FabricPort {
  std::string device, port;  // "mlx5_0", "1"
  std::string state, phys_state, rate, link_layer;
  double rate_gbps = std::numeric_limits<double>::quiet_NaN();
  std::string pci_bus_id, numa_node;
  std::vector<std::string> netdevs;
  std::vector<int> nearest_gpus;
  std::string gpu_distance;     // nvidia-smi topo's words: PIX PXB PHB NODE SYS, "" unknown
  std::optional<bool> active;   // absent in files written before issue 37

  std::string name() const { return device + "/" + port; }  // as port_counters names it
};

struct FabricNode {
  std::string host;
  std::vector<FabricPort> ports;
  std::string gpudirect;               // "possible: nvidia_peermem loaded", "not possible: ...", "" unknown
  std::vector<Record> checks;          // its fabric_ports, fabric_rate, gpudirect, hca_loopback records
  std::vector<CounterChange> counters;  // its counters that rose or went down
  Level level = Level::Pass;           // the worst of its checks and counters
};

// A measurement across nodes with the rule verdict that judged it against the fabric (the
// line-rate or latency rule), if one did.
struct FabricMeasurement {
  Record record;
  std::optional<RuleVerdict> verdict;  // the worst verdict about the record
  Level level = Level::Pass;           // worst of the record's status and its rule verdicts
};

struct Fabric {
  std::vector<FabricNode> nodes;             // the inventory's node order, then others
  PortCounterJudgement counters;
  std::vector<Record> transports;            // nccl_transport, one per multi-node scale
  // Per collective (all_reduce, all_gather, reduce_scatter) and scale across nodes (inter_node,
  // all): the largest size from 256 MiB, the lowest busbw there.
  std::vector<FabricMeasurement> bandwidth;
  std::vector<FabricMeasurement> latency;    // all_reduce 8 B time across nodes, every dtype and placement
  std::vector<Record> node_pairs;            // pair_busbw with scale node_pair
  std::optional<Record> slowest_pair;

  bool empty() const;  // nothing about the fabric in the run
};

// Records about the fabric that name one node although written at job level (rank -1):
// discover's fabric_ports, fabric_rate and gpudirect, nccl-scaling's hca_loopback, and the
// report's own port_counters. A FAIL of one is a bad port of that node.
bool fabric_record_names_node(const Record& r);

// The fabric's notes that ask to watch a node, not drain it: counters that went down or stand
// at their largest value. (node, "WARN port_counters ...: message").
std::vector<std::pair<std::string, std::string>> fabric_concerns(const Fabric& f);

// `nodes`: the report's node order (the inventory's); `checks` and `verdicts`: the report's.
Fabric build_fabric(const LoadedRun& run, const std::vector<std::string>& nodes, const std::vector<Record>& checks,
                    const std::vector<RuleVerdict>& verdicts, PortCounterJudgement counters);

}  // namespace gpuaccept::report
