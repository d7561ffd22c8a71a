// A run's headline figures: the few numbers an operator follows from run to run and a
// dashboard plots (history.jsonl, the metrics file). Each is taken from the records by a
// fixed rule, so two runs' figures mean the same thing:
//   nccl_busbw        GB/s  busbw at the largest message, per collective, scale and rank count;
//                           the lowest record there (the worst node, for intra_node)
//   gemm_tflops       TFLOP/s  smoke's GEMM at its largest size, per dtype: median and min over GPUs
//   memory_bandwidth  GB/s  smoke's device-to-device copy: median and min over GPUs
//   ddp_tokens_per_s_per_gpu, fsdp_lora_tokens_per_s_per_gpu  tokens/s  the all-GPU run (scale=all)
// A phase that did not measure a figure leaves it out (never a zero).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "results/record.h"

namespace gpuaccept::report {

struct HeadlineFigure {
  std::string name;  // one of the names above
  std::string unit;  // "GB/s", "TFLOP/s", "tokens/s"
  std::vector<std::pair<std::string, std::string>> labels;  // e.g. {collective, all_reduce}, {scale, all}
  double value = 0;
};

std::vector<HeadlineFigure> headline_figures(const std::vector<Record>& records);

// "all_reduce scale=all ranks=16": the labels' values, for tables and chart legends.
std::string labels_text(const HeadlineFigure& f);

}  // namespace gpuaccept::report
