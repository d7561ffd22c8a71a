// The shared-filesystem step over all ranks: token files cross-checked between nodes
// (fs_token.h), then metadata latency and streaming throughput measured by one rank
// per node (fs_bench.h). Every rank calls it: it contains World collectives.
#pragma once

#include <filesystem>

#include "phase/phase_runner.h"
#include "smoke/smoke_config.h"

namespace gpuaccept::smoke {

// smoke.fs_dir, else <run dir>/smoke.fs. A cluster test can point it at a node-private
// path (e.g. /tmp/x) to see the check FAIL naming both nodes.
std::filesystem::path fs_check_dir(const SmokeConfig& cfg, const std::filesystem::path& run_dir);

void run_shared_fs_checks(PhaseContext& ctx, const SmokeConfig& cfg);

}  // namespace gpuaccept::smoke
