// The few controller queries the smoke phase makes through libslurm: does slurmctld
// answer, is the job's partition up, what state and GRES do the job's nodes have.
// Call these from one rank (rank 0), never from every rank: a 1000-rank job must
// not send 1000 RPCs to the controller.
//
// Failures follow the one error path: a failed RPC throws CallError("Slurm", call,
// slurm_strerror). Node-state naming and "is this node usable" are pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuaccept {

struct SlurmNode {
  std::string name;
  std::uint32_t state = 0;  // enum node_states | NODE_STATE_* flags
  std::string reason;       // why DOWN/DRAIN, as the admin or slurmd set it
  std::string gres;         // configured GRES, e.g. "gpu:h200:8(S:0-1)"
};

struct SlurmPartition {
  std::string name;
  std::uint16_t state_up = 0;  // PARTITION_UP, PARTITION_DOWN, ...
};

// slurm_init() once per process. Throws CallError when the configuration file
// cannot be read (libslurm would otherwise exit the process from inside slurm_init).
void ensure_slurm_initialized();

// slurm_ping(0): "" when the primary controller answers, else the error text.
std::string slurm_ping_controller();

// The controller's Slurm version ("24.11.5"), from slurm_load_ctl_conf (one RPC). Throws
// CallError with libslurm's reason when the controller refuses this client (a libslurm of
// a release it does not accept: "Incompatible versions of client and server code").
std::string slurm_controller_version();

// All partitions (one RPC); empty name list entries are never returned.
std::vector<SlurmPartition> slurm_partitions();
std::optional<SlurmPartition> find_partition(const std::vector<SlurmPartition>& all, const std::string& name);

// The named nodes from one slurm_load_node RPC, in the order asked; a name the
// controller does not know comes back with state NODE_STATE_UNKNOWN and reason "not known".
std::vector<SlurmNode> slurm_nodes(const std::vector<std::string>& names);

// Drains `node` with `reason` (one slurm_update_node RPC; needs SlurmUser or root, as
// slurmd's HealthCheckProgram and Prolog run). Throws CallError naming the node.
void drain_node(const std::string& node, const std::string& reason);

// "gpa-node[1-3],gpu7" -> {"gpa-node1","gpa-node2","gpa-node3","gpu7"} (slurm_hostlist_*).
std::vector<std::string> expand_hostlist(const std::string& nodelist);

// {"gpa-node3","gpa-node1","gpa-node2","gpu7"} -> "gpa-node[1-3],gpu7": sorted, duplicates
// dropped, ranges compressed as `scontrol show hostlist` gives (slurm_hostlist_*; no RPC,
// no slurm.conf needed). "" for no names.
std::string compress_hostlist(const std::vector<std::string>& names);

// "IDLE", "MIXED+DRAIN", "DOWN+NOT_RESPONDING": base state plus the flags that matter here.
std::string node_state_name(std::uint32_t state);
// Why a node in this state must not run acceptance jobs ("" when it may):
// DOWN, DRAIN(ED/ING), FAIL(ING), not responding, powered down, unknown.
std::string node_state_problem(std::uint32_t state);
// "UP", "DOWN", "DRAIN", "INACTIVE".
std::string partition_state_name(std::uint16_t state_up);

}  // namespace gpuaccept
