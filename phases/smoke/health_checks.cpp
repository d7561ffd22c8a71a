#include "smoke/health_checks.h"

#include "hw/nvml_health.h"
#include "smoke/health_eval.h"

namespace gpuaccept::smoke {

namespace {
Record tag(const GpuDevice& gpu, Record r) {
  r.gpu_index = gpu.node_index;
  r.gpu_uuid = gpu.uuid;
  return r;
}
}  // namespace

std::string health_unavailable(const GpuDevice& gpu) {
  if (!Nvml::instance().available()) return Nvml::instance().reason();
  if (!gpu.present()) return gpu.reason;
  if (!gpu.nvml) return gpu.nvml_reason;
  return "";
}

std::vector<Record> gpu_health_checks(const GpuDevice& gpu, const SmokeConfig& cfg) {
  if (const std::string why = health_unavailable(gpu); !why.empty()) {
    Record r = tag(gpu, health_record("all"));
    r.status = Status::Skip;
    r.message = why;
    return {r};
  }
  const NvmlHealth h(Nvml::instance());
  const Nvml::Device d = *gpu.nvml;
  const auto remap = h.remapped_rows(d);
  std::vector<Record> out;
  out.push_back(eval_ecc(h.ecc_uncorrected(d, false), h.ecc_uncorrected(d, true), remap));
  out.push_back(eval_row_remap(remap));
  if (auto pages = eval_retired_pages(h.retired_pages(d), remap.has_value())) out.push_back(std::move(*pages));
  out.push_back(eval_clock_events(h.clock_events(d)));
  out.push_back(eval_temperature(h.temperature_c(d), h.slowdown_temperature_c(d), cfg.max_temperature_c));
  out.push_back(eval_power(h.power_mw(d), h.power_limit_mw(d)));
  out.push_back(eval_clock("sm_clock", h.clock_mhz(d, nvml_api::NVML_CLOCK_SM), h.max_clock_mhz(d, nvml_api::NVML_CLOCK_SM)));
  out.push_back(
      eval_clock("mem_clock", h.clock_mhz(d, nvml_api::NVML_CLOCK_MEM), h.max_clock_mhz(d, nvml_api::NVML_CLOCK_MEM)));
  out.push_back(eval_nvlink(h.nvlinks(d)));
  for (auto& r : out) r = tag(gpu, std::move(r));
  return out;
}

Record pcie_link_check(const GpuDevice& gpu, bool under_load) {
  if (const std::string why = health_unavailable(gpu); !why.empty()) {
    Record r = tag(gpu, health_record("pcie_link"));
    r.status = Status::Skip;
    r.message = why;
    return r;
  }
  return tag(gpu, eval_pcie(NvmlHealth(Nvml::instance()).pcie_link(*gpu.nvml), under_load));
}

}  // namespace gpuaccept::smoke
