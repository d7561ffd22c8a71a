// One node's health in seconds, with no other rank and no results file: what Slurm's
// HealthCheckProgram or a Prolog runs before a node takes jobs (gpuaccept-health,
// docs/health-check.md). It reuses smoke's checks at small sizes:
//   GPUs present: as many as expected, CUDA and NVML agreeing;
//   driver and CUDA versions as expected (when given);
//   per GPU (one thread each): NVML health (ECC, row remapping, clock-event reasons,
//     temperature, power, NVLink), a verified bf16 GEMM and verified device copies;
//   the kernel log's XIDs that mean a GPU must not take jobs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuaccept::smoke {

struct HealthOptions {
  int expect_gpus = -1;         // -1: as many as NVML sees, at least one
  std::string expect_driver;    // e.g. "580.95.05"; "" = any
  int expect_cuda = 0;          // the driver's CUDA version, e.g. 13000; 0 = any
  int gemm_size = 2048;         // bf16 m = n = k
  std::uint64_t copy_bytes = 256ull << 20;
  bool read_xids = true;        // the kernel log (needs root; unreadable is a note, not a failure)
  std::string debug_fail;       // hidden: a problem injected by the tests
};

struct HealthResult {
  int gpus = 0;
  std::string gpu_name;                // of GPU 0
  std::vector<std::string> problems;   // each names the GPU (CUDA index and PCI bus id) when about one
  std::vector<std::string> notes;      // what could not be checked, and why
  bool ok() const { return problems.empty(); }
};

HealthResult check_node_health(const HealthOptions& options);

}  // namespace gpuaccept::smoke
