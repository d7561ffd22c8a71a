// Reads this rank's GPU through NVML and turns the readings into gpu_health records
// (rules in health_eval.h). Without a GPU or NVML, one SKIP record gives the reason.
#pragma once

#include <vector>

#include "results/record.h"
#include "smoke/gpu_device.h"
#include "smoke/smoke_config.h"

namespace gpuaccept::smoke {

// Every item but the PCIe link, which is read under load (pcie_link_check).
std::vector<Record> gpu_health_checks(const GpuDevice& gpu, const SmokeConfig& cfg);
// The PCIe link as it is now; `under_load`: host-device copies are in flight.
Record pcie_link_check(const GpuDevice& gpu, bool under_load);
// Why this GPU's health cannot be read ("" when it can).
std::string health_unavailable(const GpuDevice& gpu);

}  // namespace gpuaccept::smoke
