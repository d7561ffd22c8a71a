#include "ddp/gradient_check.h"

#include <cmath>

#include <cuda_bf16.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_handles.h"
#include "ddp/cpu_reference.h"
#include "ddp/gpu/gpt_model.h"
#include "train/markov_data.h"
#include "ddp/param_layout.h"

namespace gpuaccept::ddp {

GradientCheck run_gradient_check(std::uint64_t seed, gpu::ModelOptions options) {
  GradientCheck out;
  out.config = gradient_check_config;
  out.B = 4;
  out.T = 64;
  const GptConfig& cfg = out.config;
  const int N = out.B * out.T;

  // Weights the GPU's bf16 copy holds exactly, so both sides compute with the same numbers.
  std::vector<double> params = init_params(cfg, seed);
  for (double& p : params) p = __bfloat162float(__float2bfloat16(static_cast<float>(p)));
  const train::MarkovData data(cfg.vocab, seed);
  const train::TokenBatch batch = data.sample(0, 0, out.B, out.T);

  const ParamLayout cpu_layout(cfg);
  std::vector<double> cpu_grads(params.size());
  out.loss_cpu = gpt_forward_backward(cfg, params, batch.tokens, batch.targets, out.B, out.T, cpu_grads);

  gpu::GptModel model(cfg, out.B, out.T, options);
  out.fusions = model.fusions();
  out.attention = model.attention();
  const ParamLayout& gpu_layout = model.layout();
  CudaStream stream;
  model.set_master(gpu::to_padded_master(cfg, params), stream);
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(model.tokens(), batch.tokens.data(), N * sizeof(int), cudaMemcpyHostToDevice, stream));
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(model.targets(), batch.targets.data(), N * sizeof(int), cudaMemcpyHostToDevice, stream));
  // NaN in every gradient (all bits set) before an overwriting backward, as a step's first
  // micro-batch runs it: a gradient the backward leaves unwritten is a NaN the check reports.
  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(model.grads(), 0xff, model.num_params() * sizeof(float), stream));
  model.embedding_rows().clear_marks();
  model.embedding_rows().mark(batch.tokens);
  std::vector<float> losses(static_cast<std::size_t>(N));
  // One forward and backward of the batch, as a step's micro-batch runs it, and the
  // gradients it leaves (the rows of the token embedding planned afresh, plan() zeroing them,
  // and added in).
  auto pass = [&](gpu::GptModel::Grads mode) {
    model.embedding_rows().plan(nullptr, stream);
    model.forward(1.0f / static_cast<float>(N), stream);
    GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(losses.data(), model.losses(), losses.size() * sizeof(float),
                                         cudaMemcpyDeviceToHost, stream));
    model.embedding_rows().wait(stream);
    model.backward(stream, mode, [](int) {});
    model.embedding_rows().add_into(model.grads() + gpu_layout[Param::wte].offset, stream);
    std::vector<float> grads(model.num_params());
    GPUACCEPT_CUDA_CHECK(
        cudaMemcpyAsync(grads.data(), model.grads(), grads.size() * sizeof(float), cudaMemcpyDeviceToHost, stream));
    stream.synchronize();
    return grads;
  };
  const std::vector<float> grads = pass(gpu::GptModel::Grads::Overwrite);
  // The same batch again, accumulating: every gradient should double.
  const std::vector<float> twice = pass(gpu::GptModel::Grads::Accumulate);
  out.accumulated = accumulation_error(gpu_layout, grads, twice);

  double sum = 0;
  for (float l : losses) sum += l;
  out.loss_gpu = sum / N;
  for (std::size_t i = 0; i < cpu_layout.tensors().size(); ++i) {
    const auto& c = cpu_layout.tensors()[i];
    const auto& g = gpu_layout.tensors()[i];
    TensorError e = tensor_error(
        c.name, c.size, [&](std::size_t j) { return static_cast<double>(grads[g.offset + j]); },
        [&](std::size_t j) { return cpu_grads[c.offset + j]; });
    out.tensors.push_back(e);
    for (std::size_t j = c.size; j < g.size; ++j)
      out.padding_grad_max = std::max(out.padding_grad_max, static_cast<double>(std::abs(grads[g.offset + j])));
  }
  return out;
}

}  // namespace gpuaccept::ddp
