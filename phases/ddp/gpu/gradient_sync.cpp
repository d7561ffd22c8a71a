#include "ddp/gpu/gradient_sync.h"

#include "cuda/cuda_check.h"

namespace gpuaccept::ddp::gpu {

GradientSync::GradientSync(std::vector<GradBucket> buckets, float* grads) : buckets_(std::move(buckets)), grads_(grads) {
  for (std::size_t i = 0; i < buckets_.size(); ++i) ready_.push_back(std::make_unique<CudaEvent>());
}

void GradientSync::layer_done(int layer, cudaStream_t compute, std::span<float> extra) {
  if (!comm_) return;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    const GradBucket& b = buckets_[i];
    if (b.ready_after_layer != layer) continue;
    ready_[i]->record(compute);
    GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(stream_, *ready_[i], 0));
    // One group per bucket: its slices (one per tensor) go out as a single NCCL launch.
    GPUACCEPT_NCCL_CHECK(ncclGroupStart());
    for (const GradRange& r : b.ranges)
      GPUACCEPT_NCCL_CHECK(ncclAllReduce(grads_ + r.offset, grads_ + r.offset, r.count, ncclFloat, ncclAvg, comm_, stream_));
    if (layer == -1 && !extra.empty())
      GPUACCEPT_NCCL_CHECK(ncclAllReduce(extra.data(), extra.data(), extra.size(), ncclFloat, ncclAvg, comm_, stream_));
    GPUACCEPT_NCCL_CHECK(ncclGroupEnd());
    launched_ = true;
  }
}

void GradientSync::join(cudaStream_t compute) {
  if (!launched_) return;
  done_.record(stream_);
  GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(compute, done_, 0));
  launched_ = false;
}

}  // namespace gpuaccept::ddp::gpu
