#include "fsdp-lora/fsdp_gradient_check.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "cuda/cuda_check.h"
#include "cuda/cuda_handles.h"
#include "fsdp-lora/base_init.h"
#include "fsdp-lora/cpu_reference.h"
#include "fsdp-lora/gpu/fsdp_weights.h"
#include "fsdp-lora/gpu/kernels.h"
#include "fsdp-lora/gpu/lora_linear.h"
#include "fsdp-lora/gpu/qwen_model.h"
#include "fsdp-lora/reference_check.h"
#include "fsdp-lora/shard_plan.h"
#include "train/markov_data.h"

namespace gpuaccept::fsdp {

namespace {

void round_to_bf16(std::vector<double>& v) {
  for (double& x : v) x = bf16_bits_to_double(bf16_bits(static_cast<float>(x)));
}

}  // namespace

const LoraTensorError& FsdpGradientCheck::worst() const {
  if (tensors.empty()) throw std::logic_error("FsdpGradientCheck: no tensors");
  return *std::max_element(tensors.begin(), tensors.end(),
                           [](const LoraTensorError& a, const LoraTensorError& b) { return a.rel_l2 < b.rel_l2; });
}

FsdpGradientCheck run_fsdp_gradient_check(std::uint64_t seed, int rank, int ranks, ncclComm_t comm, bool recompute,
                                          bool offload) {
  FsdpGradientCheck out;
  out.config = qwen_tiny;
  out.lora.rank = 2;
  out.lora.alpha = 4;  // scale 2
  out.lora.dropout = 0.25;
  out.lora.targets = lora_targets_by_name("all");
  out.B = 2;
  out.T = 16;
  out.ranks = ranks;
  out.recompute = recompute;
  const QwenConfig& c = out.config;
  constexpr std::uint64_t kStep = 7;

  // The same inputs on every rank: adapters part-way trained (B nonzero, so d/dA is not 0),
  // rounded to the bf16 the GPU's copy holds.
  LoraWeights adapters = init_lora(c, out.lora, seed + 1, /*b_zero=*/false);
  for (auto& layer : adapters.layers)
    for (auto& ad : layer) {
      round_to_bf16(ad.A);
      round_to_bf16(ad.B);
    }
  const train::TokenBatch batch = train::MarkovData(c.vocab, seed).sample(0, 0, out.B, out.T);
  const DropoutMasks masks = replay_masks(c, out.lora, out.B, out.T, seed, kStep);

  // GPU: the base sharded over the ranks, gathered layer by layer.
  const ShardPlan plan = make_shard_plan(c, ranks);
  CudaStream stream;
  std::vector<double> gpu_grads_flat;
  {
    gpu::FsdpWeights weights(plan, rank, ranks > 1 ? comm : nullptr, /*prefetch_layers=*/1, offload);
    weights.init_random(seed, stream);
    gpu::ModelOptions options;
    options.matmul_autotune = false;
    options.recompute = recompute;
    gpu::QwenLoraModel model(c, out.lora, out.B, out.T, options);
    model.set_weight_source(&weights);
    model.set_final_norm(weights.final_norm());
    model.upload_lora(model.lora_layout().flatten(adapters), stream);
    model.zero_lora_grads(stream);
    out.loss_gpu = model.forward_backward(batch.tokens, batch.targets, kStep, seed, stream);
    const std::vector<float> flat = model.download_lora_grads(stream);
    const LoraWeights grads = model.lora_layout().unflatten(flat);

    // CPU: the very same base, from the same pure function of (seed, tensor, element).
    const QwenBaseWeights base = host_base_weights(c, seed);
    LoraWeights ref;
    out.loss_cpu = qwen_lora_forward_backward(c, base, out.lora, adapters, batch.tokens, batch.targets, out.B, out.T,
                                              &masks, &ref);
    for (std::size_t l = 0; l < grads.layers.size(); ++l)
      for (std::size_t j = 0; j < out.lora.targets.size(); ++j)
        for (int which = 0; which < 2; ++which) {
          const auto& got = which ? grads.layers[l][j].B : grads.layers[l][j].A;
          const auto& want = which ? ref.layers[l][j].B : ref.layers[l][j].A;
          out.tensors.push_back({"layers." + std::to_string(l) + "." + projection_name(out.lora.targets[j]) +
                                     (which ? ".B" : ".A"),
                                 rel_l2(got, want)});
        }
  }  // FsdpWeights waits for its prefetched gathers here
  return out;
}

}  // namespace gpuaccept::fsdp
