// Data parallelism's communication: each gradient bucket (../grad_buckets.h) is averaged
// over the communicator with ncclAllReduce(ncclAvg) on a stream of its own, as soon as the
// backward pass has finished the bucket's layers, so the reduction of layer l overlaps
// the backward pass of layers l-1 .. 0.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include <nccl.h>

#include "cuda/cuda_handles.h"
#include "ddp/grad_buckets.h"

namespace gpuaccept::ddp::gpu {

class GradientSync {
 public:
  GradientSync(std::vector<GradBucket> buckets, float* grads);

  // The communicator of the next steps (nullptr: training alone, nothing to reduce).
  void set_comm(ncclComm_t comm) { comm_ = comm; }
  ncclComm_t comm() const { return comm_; }

  // From backward()'s layer_done hook: launches every bucket that is complete now; with
  // layer -1, `extra` (gradients outside the flat buffer: gpu/embedding_rows.h) with it.
  void layer_done(int layer, cudaStream_t compute, std::span<float> extra = {});
  // `compute` waits until every bucket launched this step is reduced.
  void join(cudaStream_t compute);
  // Whether a bucket has been launched since the last join(): NCCL may be running.
  bool reducing() const { return launched_; }

 private:
  std::vector<GradBucket> buckets_;
  float* grads_;
  ncclComm_t comm_ = nullptr;
  CudaStream stream_;
  std::vector<std::unique_ptr<CudaEvent>> ready_;  // per bucket: backward produced it
  CudaEvent done_;
  bool launched_ = false;
};

}  // namespace gpuaccept::ddp::gpu
