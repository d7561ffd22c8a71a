// Which records go into which plot: NCCL busbw against message size per collective,
// per-GPU bars for GEMM and memory bandwidth, training throughput and scaling efficiency
// against GPU count, and per-rank and per-node bars. Plain chart data; rendering is charts.h.
#pragma once

#include <vector>

#include "html/charts.h"
#include "model/report.h"

namespace gpuaccept::report {

// One chart per collective; one line per (scale, ranks). Where several records share
// a point (one per node), the lowest is drawn: acceptance is about the worst.
std::vector<LineChart> nccl_busbw_charts(const Report& report);

// One chart per distinct params of (phase, test, metric), one bar per GPU, with the
// bounds of the rules that judged them and the fleet median as reference lines.
std::vector<BarChart> per_gpu_charts(const Report& report, const std::string& phase, const std::string& test,
                                     const std::string& metric);

// A training phase (ddp, fsdp-lora): tokens/s per GPU and scaling efficiency against GPU
// count; the loss per step. `label` starts the titles ("DDP").
std::vector<LineChart> training_charts(const Report& report, const std::string& phase, const std::string& label);

// One bar per rank of (phase, test, metric), e.g. fsdp-lora's memory in use per rank, with
// the median as a reference line; empty when no rank recorded it.
std::vector<BarChart> per_rank_charts(const Report& report, const std::string& phase, const std::string& test,
                                      const std::string& metric, const std::string& title);

// One bar per node of (phase, test, metric) records about a node (rank -1, node set), e.g. a
// training checkpoint's write bandwidth per node, with the absolute rules' bounds and the median
// as reference lines: up to 256 nodes in the report's node order, past that the 64 lowest.
// Empty when no node recorded it.
std::vector<BarChart> per_node_charts(const Report& report, const std::string& phase, const std::string& test,
                                      const std::string& metric, const std::string& title);

}  // namespace gpuaccept::report
