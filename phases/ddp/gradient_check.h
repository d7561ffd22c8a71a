// The GPU model against the float64 CPU reference (cpu_reference.h) on a tiny GPT: the
// same bf16-representable weights and tokens, one forward and backward on each, then the
// loss and every parameter tensor's gradient compared. bf16 activations make the GPU
// differ by about 1e-3 relative; a wrong kernel differs by order 1, so a tolerance of a
// few percent separates the two cleanly (README.md states the figures seen).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ddp/gpt_config.h"
#include "ddp/gpu/gpt_model.h"
#include "ddp/tensor_error.h"

namespace gpuaccept::ddp {

struct GradientCheck {
  GptConfig config;
  int B = 0, T = 0;
  double loss_gpu = 0, loss_cpu = 0;
  std::vector<TensorError> tensors;  // in layout order: the GPU's gradient against the CPU's
  double padding_grad_max = 0;       // max |gradient| in wte's padding rows (must be 0)
  // A second forward and backward of the same batch, accumulating (as a step's later
  // micro-batches do): the tensor farthest from twice the first backward's gradient.
  TensorError accumulated;
  std::string fusions;               // the matmul epilogues the GPU model used (gpt_model.h)
  std::string attention;             // "flash" or "gemm+softmax"
};

// The model checked: vocab 100 (padded to 128 on the GPU), 64 positions, 2 layers,
// 2 heads of 64 (what flash attention needs), 128 channels; 4 sequences of 64 tokens. Runs
// on the current CUDA device, computing the way `options` asks (gpu/gpt_model.h).
inline constexpr GptConfig gradient_check_config{100, 64, 2, 2, 128};
GradientCheck run_gradient_check(std::uint64_t seed, gpu::ModelOptions options);

}  // namespace gpuaccept::ddp
