#include "ddp/gpu/gradient_sync.h"

#include "cuda/cuda_check.h"

namespace gpuaccept::ddp::gpu {

GradientSync::GradientSync(std::vector<GradBucket> buckets, float* grads, std::size_t elements,
                           ReducePrecision precision, std::size_t extra_capacity)
    : buckets_(std::move(buckets)), grads_(grads), elements_(elements), precision_(precision) {
  for (std::size_t i = 0; i < buckets_.size(); ++i) ready_.push_back(std::make_unique<CudaEvent>());
  if (precision_ == ReducePrecision::Bf16) rounded_ = DeviceBuffer<bf16>(elements + extra_capacity);
}

void GradientSync::reduce(float* data, bf16* rounded, std::size_t count) {
  if (precision_ == ReducePrecision::Fp32)
    GPUACCEPT_NCCL_CHECK(ncclAllReduce(data, data, count, ncclFloat, ncclAvg, comm_, stream_));
  else
    GPUACCEPT_NCCL_CHECK(ncclAllReduce(rounded, rounded, count, ncclBfloat16, ncclAvg, comm_, stream_));
}

void GradientSync::layer_done(int layer, cudaStream_t compute, std::span<float> extra) {
  if (!comm_) return;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    const GradBucket& b = buckets_[i];
    if (b.ready_after_layer != layer) continue;
    ready_[i]->record(compute);
    GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(stream_, *ready_[i], 0));
    // The slices (one per tensor) and, for the last bucket, `extra` (after the flat part
    // in rounded_).
    struct Part {
      float* data;
      bf16* rounded;  // its place in rounded_ (Bf16 only)
      std::size_t count;
    };
    const bool bf16 = precision_ == ReducePrecision::Bf16;
    std::vector<Part> parts;
    for (const GradRange& r : b.ranges)
      parts.push_back({grads_ + r.offset, bf16 ? rounded_.get() + r.offset : nullptr, r.count});
    if (layer == -1 && !extra.empty())
      parts.push_back({extra.data(), bf16 ? rounded_.get() + elements_ : nullptr, extra.size()});
    if (bf16)
      for (const Part& p : parts) cast_to_bf16(p.rounded, p.data, p.count, stream_);
    // One group per bucket: its parts go out as a single NCCL launch.
    GPUACCEPT_NCCL_CHECK(ncclGroupStart());
    for (const Part& p : parts) reduce(p.data, p.rounded, p.count);
    GPUACCEPT_NCCL_CHECK(ncclGroupEnd());
    if (bf16)
      for (const Part& p : parts) cast_to_fp32(p.data, p.rounded, p.count, stream_);
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
