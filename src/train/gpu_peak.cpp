#include "train/gpu_peak.h"

namespace gpuaccept::train {

double bf16_peak_tflops(const std::string& name) {
  // Dense (no sparsity) bf16 tensor-core peaks of the SXM parts, from NVIDIA's data sheets.
  if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos) return 989.4;
  if (name.find("B200") != std::string::npos) return 2250;
  if (name.find("A100") != std::string::npos) return 312;
  return 0;
}

}  // namespace gpuaccept::train
