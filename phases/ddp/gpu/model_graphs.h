// GptModel's forward and backward of one micro-batch, replayed from CUDA graphs
// (ddp.cuda_graph): each pass is captured the first time it is asked for, then launched as
// one graph, its few hundred kernels and cuBLASLt calls (with their memsets) started back to
// back by the GPU. For a run with no communicator only: there the backward's layer hooks do
// nothing, where with one they launch the all-reduce buckets from the host between layers.
// Where a capture fails (a library call this CUDA cannot capture), the passes run eagerly
// from then on, as without the option, and failure() says why: an optimisation that cannot
// be had is no fault of the GPU's.
//
// Replays compute exactly what the eager calls would (the same kernels, arguments and
// algorithms), so the same bits. What a capture fixes: the model's buffers (they live as long
// as the model), dloss (a forward graph for each value asked for: a run's micro-batch count
// sets it), the Grads mode (a backward graph for each), the matmuls' algorithms (so the first
// call of each shape, which times cuBLASLt's candidates with host waits, must have run eagerly
// before: the trainer replays from a run's second step on), and the backward's reduction
// scratch, whose reallocation (reduction_scratch_generation()) drops every graph.
//
// Each captured graph's memset nodes (cuBLASLt's, before most of its kernels) become kernel
// nodes writing the same bytes (train/graph_memsets.h): a launch of the graph costs the host
// 18 us instead of 127, and the GPU no longer idles 3.5-5 us around each memset node.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "cuda/cuda_graph.h"
#include "ddp/gpu/gpt_model.h"
#include "train/graph_memsets.h"

namespace gpuaccept::ddp::gpu {

class ModelGraphs {
 public:
  // refuse_captures (a test's hidden flag): every capture also synchronises its stream, which
  // no capture allows, so the fallback runs as a real refusal would make it.
  explicit ModelGraphs(GptModel& model, bool refuse_captures = false) : model_(model), refuse_(refuse_captures) {}

  // model.forward(dloss, stream), from its graph.
  void forward(float dloss, cudaStream_t stream);
  // model.backward(stream, grads, no hooks), from its graph. The embedding rows must be
  // planned, and waited for on `stream`, before (EmbeddingRows::wait).
  void backward(GptModel::Grads grads, cudaStream_t stream);
  // Graphs captured so far, and the memset nodes turned into kernels in them (for the log).
  int captured() const { return captures_; }
  const train::GraphMemsets& memsets() const { return memsets_; }
  // Why the passes run eagerly ("" while graphs are in use).
  const std::string& failure() const { return failure_; }

 private:
  void drop_if_stale();
  // The graph enqueue() captures, or an empty one after recording the failure.
  template <typename Enqueue>
  CudaGraphExec capture(cudaStream_t stream, Enqueue&& enqueue);

  GptModel& model_;
  bool refuse_;
  std::map<float, CudaGraphExec> forward_;  // by dloss
  std::map<GptModel::Grads, CudaGraphExec> backward_;
  std::uint64_t scratch_generation_ = 0;
  int captures_ = 0;
  train::GraphMemsets memsets_;
  std::string failure_;
};

}  // namespace gpuaccept::ddp::gpu
