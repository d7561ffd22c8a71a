// What a check of the GPU model against the float64 CPU reference (cpu_reference.h) needs on
// the host: the GPU's LoRA dropout masks replayed for the reference, and the error measure.
// Used by the phase's gradient check (fsdp_gradient_check.h) and tests/gpu/fsdp_model_test.cu,
// so both compare the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "fsdp-lora/cpu_reference.h"
#include "fsdp-lora/qwen_config.h"

namespace gpuaccept::fsdp {

// The masks the GPU draws for (seed, step) (gpu/kernels.h), as the reference takes them: entry
// e of the adapter on target p of layer l is kept when dropout_keep(dropout_stream({seed, step,
// l, index of p}), e, threshold), and is then worth 1/(1-p). B*T rows per micro-batch.
DropoutMasks replay_masks(const QwenConfig& c, const LoraConfig& lora, int B, int T, std::uint64_t seed,
                          std::uint64_t step);

// ||got - want|| / ||want|| (||got - want|| when want is 0; infinite when got is not finite).
double rel_l2(const std::vector<double>& got, const std::vector<double>& want);

}  // namespace gpuaccept::fsdp
