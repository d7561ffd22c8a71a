// discover's checks of the libraries each node loaded and of the Slurm client against the
// controller, computed by rank 0 from every rank's inventory (its `libraries` list,
// cuda/library_versions.h). Pure functions, unit-tested in tests/unit/test_discover_checks.cpp.
//  - library_versions (per node): the NCCL, CUDA runtime and PMIx the node's ranks loaded
//    can run what the binary was built against: no older NCCL or PMIx major than the headers
//    (missing functions, older protocol), no CUDA driver older than the runtime loaded.
//  - slurm_client (the job): the libslurm built against may talk to this controller
//    (slurm/slurm_release.h); a release it does not accept FAILs with what to rebuild against.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/record.h"

namespace gpuaccept::discover {

std::vector<Record> check_library_versions(const std::vector<nlohmann::json>& inventories);

// `controller_version`: slurmctld's ("24.11.5"), or nullopt with `why_unknown` when it could
// not be asked (no slurm.conf: not under Slurm) or refused the client (`refused` = libslurm's
// error text, the usual sign of a release it does not accept).
struct ControllerAnswer {
  std::optional<std::string> version;
  std::string refused;      // the RPC failed with this reason
  std::string why_unknown;  // not asked: why
};
Record check_slurm_client(const std::string& client_version, const ControllerAnswer& answer);

}  // namespace gpuaccept::discover
