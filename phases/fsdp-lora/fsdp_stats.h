// The arithmetic behind the fsdp-lora phase's records, free of CUDA so the unit tests
// (tests/unit/fsdp_lora) check it: medians of per-step figures, the share
// of the all-gather time hidden behind compute and the scaling efficiency. (The FLOP count MFU
// divides by is qwen_config.h's training_flops_per_token.)
#pragma once

#include <vector>

namespace gpuaccept::fsdp {

// The median of values[skip..], or of the last value when skip covers them all; NaN when empty.
double median_after(const std::vector<double>& values, int skip);

// Percent of the gathers' time that the compute stream did not wait for: 100 (1 - exposed /
// gather), clamped to [0, 100]; 100 when nothing was gathered (one rank).
double hidden_percent(double gather_ms, double exposed_ms);

// Scaling efficiency in percent: tokens/s per GPU at a scale against each GPU alone,
// 100 x at_scale / alone; NaN when either is not a positive finite figure.
double scaling_efficiency(double per_gpu_at_scale, double per_gpu_alone);

}  // namespace gpuaccept::fsdp
