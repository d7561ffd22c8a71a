// The plots section: which charts exist depends on which phases ran.
#include <fmt/format.h>

#include "html/html_sections.h"
#include "html/report_figures.h"

namespace gpuaccept::report {

namespace {

template <typename Chart>
std::string figure_group(const char* heading, const char* note, const std::vector<Chart>& charts) {
  if (charts.empty()) return {};
  std::string svgs;
  for (const auto& c : charts) svgs += "<figure>" + render_svg(c) + "</figure>\n";
  return fmt::format(R"(<h3>{}</h3><p class="muted">{}</p><div class="charts">
{}</div>
)",
                     heading, note, svgs);
}

}  // namespace

std::string plots_section(const Report& r) {
  std::string body;
  body += figure_group("NCCL bus bandwidth", "busbw against message size (log scale); one line per scale and rank count.",
                       nccl_busbw_charts(r));
  body += figure_group("GEMM throughput", "TFLOP/s per GPU, coloured by the worst check or rule on that GPU.",
                       per_gpu_charts(r, "smoke", "gemm", "tflops"));
  body += figure_group("Memory bandwidth", "GB/s per GPU.", per_gpu_charts(r, "smoke", "memory_bandwidth", "bandwidth"));
  body += figure_group("Host–device bandwidth", "GB/s per GPU over PCIe.",
                       per_gpu_charts(r, "smoke", "host_device_bandwidth", "bandwidth"));
  body += figure_group("Training (ddp)",
                       "DDP tokens/s per GPU and scaling efficiency against GPU count, and the training loss per step.",
                       training_charts(r, "ddp", "DDP"));
  body += figure_group("Fine-tuning (fsdp-lora)", "LoRA on the sharded frozen base: tokens/s per GPU, the loss per step.",
                       training_charts(r, "fsdp-lora", "FSDP-LoRA"));
  std::vector<BarChart> fsdp_ranks = per_rank_charts(r, "fsdp-lora", "memory", "peak_used_gib", "GPU memory in use per rank");
  for (auto& c : per_rank_charts(r, "fsdp-lora", "gather", "exposed_ms", "All-gather time not hidden, per rank and step"))
    fsdp_ranks.push_back(std::move(c));
  body += figure_group("Fine-tuning per rank (fsdp-lora)",
                       "Device memory in use at the busiest step end, and the time the compute stream waited for a "
                       "layer's all-gather.",
                       fsdp_ranks);
  if (body.empty()) body = R"(<p class="muted">No measurements to plot in this run.</p>)";
  return fmt::format(R"(<section id="plots"><h2>Plots</h2>
{}</section>
)",
                     body);
}

}  // namespace gpuaccept::report
