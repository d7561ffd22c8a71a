// The peak that MFU divides by, one table for both training phases (ddp, fsdp-lora), so a
// GPU's MFU means the same in either phase's records.
#pragma once

#include <string>

namespace gpuaccept::train {

// Dense bf16 tensor-core peak of a GPU by its name (H100/H200 989.4 TFLOP/s, ...); 0 when unknown.
double bf16_peak_tflops(const std::string& gpu_name);

}  // namespace gpuaccept::train
