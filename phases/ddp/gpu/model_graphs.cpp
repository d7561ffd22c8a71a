#include "ddp/gpu/model_graphs.h"

#include <algorithm>
#include <exception>

#include "cuda/cuda_check.h"
#include "ddp/gpu/kernels.h"

namespace gpuaccept::ddp::gpu {

void ModelGraphs::drop_if_stale() {
  const std::uint64_t generation = reduction_scratch_generation();
  if (generation == scratch_generation_) return;
  forward_.clear();
  backward_.clear();
  scratch_generation_ = generation;
}

template <typename Enqueue>
CudaGraphExec ModelGraphs::capture(cudaStream_t stream, Enqueue&& enqueue) {
  try {
    CudaGraphExec g = CudaGraphExec::capture(
        stream,
        [&] {
          enqueue();
          if (refuse_) GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));
        },
        [&](cudaGraph_t graph) {
          const train::GraphMemsets m = train::memsets_as_kernels(graph);
          memsets_.replaced += m.replaced;
          memsets_.bytes += m.bytes;
          memsets_.largest = std::max(memsets_.largest, m.largest);
        });
    ++captures_;
    return g;
  } catch (const std::exception& e) {
    failure_ = e.what();
    return {};
  }
}

void ModelGraphs::forward(float dloss, cudaStream_t stream) {
  drop_if_stale();
  auto it = forward_.find(dloss);
  if (failure_.empty() && it == forward_.end())
    it = forward_.emplace(dloss, capture(stream, [&] { model_.forward(dloss, stream); })).first;
  if (!failure_.empty()) return model_.forward(dloss, stream);
  it->second.launch(stream);
}

void ModelGraphs::backward(GptModel::Grads grads, cudaStream_t stream) {
  drop_if_stale();
  auto it = backward_.find(grads);
  if (failure_.empty() && it == backward_.end())
    it = backward_.emplace(grads, capture(stream, [&] { model_.backward(stream, grads, [](int) {}); })).first;
  if (!failure_.empty()) return model_.backward(stream, grads, [](int) {});
  it->second.launch(stream);
}

}  // namespace gpuaccept::ddp::gpu
