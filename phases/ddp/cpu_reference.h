// The float64 CPU reference of GPT-2: forward, loss and backward, written for clarity, not
// speed. It is the ground truth the GPU implementation's loss and gradients are compared
// against; its own gradients are checked by finite differences (tests/unit/ddp).
// Math: README.md in this folder. Parameter order: param_layout.h.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ddp/gpt_config.h"

namespace gpuaccept::ddp {

// tokens and targets are (B, T), row-major, T <= config.max_seq; targets[b,t] is the token
// that should follow tokens[b,0..t]. Returns the mean cross-entropy over the B*T positions, in
// nats. When grads is not empty it must hold one entry per parameter and is overwritten with
// d(loss)/d(params); when it is empty only the forward pass runs.
// Throws std::invalid_argument on sizes that do not match or token ids outside the vocabulary.
double gpt_forward_backward(const GptConfig& config, std::span<const double> params, std::span<const int> tokens,
                            std::span<const int> targets, int B, int T, std::span<double> grads);

// GPT-2's initialisation: weights and embeddings normal with std 0.02, the two projections
// that write into the residual stream (attprojw, fcprojw) scaled by 1/sqrt(2*layers) so the
// stream's variance does not grow with depth, biases 0, LayerNorm weights 1.
// Deterministic for a seed on every platform (mt19937_64 and our own Box-Muller).
std::vector<double> init_params(const GptConfig& config, std::uint64_t seed);

}  // namespace gpuaccept::ddp
