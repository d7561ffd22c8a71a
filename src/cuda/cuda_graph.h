// A CUDA graph captured from the work a callable enqueues on a stream, instantiated once and
// replayed by launch(): hundreds of launches become one, and the GPU's front end starts each
// kernel as the one before ends instead of waiting for the host's launch of it. Owns the
// executable graph; movable, the moved-from one emptied (as cuda_handles.h's owners).
//
// What the callable enqueues is recorded, not run: every pointer and argument is fixed at
// capture, so a replay computes on the same buffers with the same scalars. The capture is
// thread-local (cudaStreamCaptureModeThreadLocal): other threads' CUDA calls go on as usual,
// and a call of this thread that cannot be captured (a synchronisation, a cudaMalloc) fails
// the capture, which capture() reports and leaves the stream as it was.
#pragma once

#include <utility>

#include <cuda_runtime.h>

#include "cuda/cuda_check.h"

namespace gpuaccept {

class CudaGraphExec {
 public:
  CudaGraphExec() = default;
  CudaGraphExec(CudaGraphExec&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}
  CudaGraphExec& operator=(CudaGraphExec&& o) noexcept {
    if (this != &o) {
      if (exec_) cudaGraphExecDestroy(exec_);
      exec_ = std::exchange(o.exec_, nullptr);
    }
    return *this;
  }
  CudaGraphExec(const CudaGraphExec&) = delete;
  CudaGraphExec& operator=(const CudaGraphExec&) = delete;
  ~CudaGraphExec() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }

  // The work enqueue() puts on `stream`, as a graph ready to launch; edit(graph) may rewrite
  // the captured graph before it is instantiated (train/graph_memsets.h). Throws (naming the
  // failing call) where enqueue() or edit() throws or something enqueued cannot be captured.
  template <typename Enqueue, typename Edit = void (*)(cudaGraph_t)>
  static CudaGraphExec capture(cudaStream_t stream, Enqueue&& enqueue, Edit&& edit = [](cudaGraph_t) {}) {
    GPUACCEPT_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    cudaGraph_t graph = nullptr;
    try {
      enqueue();
    } catch (...) {
      (void)cudaStreamEndCapture(stream, &graph);  // ends the capture whatever its state
      if (graph) cudaGraphDestroy(graph);
      (void)cudaGetLastError();
      throw;
    }
    GPUACCEPT_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    try {
      edit(graph);
    } catch (...) {
      cudaGraphDestroy(graph);
      throw;
    }
    CudaGraphExec g;
    const cudaError_t rc = cudaGraphInstantiate(&g.exec_, graph, 0);
    cudaGraphDestroy(graph);  // the executable graph keeps what it needs
    GPUACCEPT_CUDA_CHECK(rc);
    return g;
  }

  void launch(cudaStream_t stream) const { GPUACCEPT_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace gpuaccept
