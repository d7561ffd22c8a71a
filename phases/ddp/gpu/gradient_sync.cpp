#include "ddp/gpu/gradient_sync.h"

#include "cuda/cuda_check.h"

namespace gpuaccept::ddp::gpu {

GradientSync::GradientSync(std::vector<GradBucket> buckets, float* grads, std::size_t elements,
                           ReducePrecision precision, std::size_t extra_capacity)
    : buckets_(std::move(buckets)), grads_(grads), precision_(precision) {
  std::size_t base = 0;
  for (const GradBucket& b : buckets_) {
    ready_.push_back(std::make_unique<CudaEvent>());
    packed_at_.push_back(base);
    base += b.elements;
  }
  if (precision_ == ReducePrecision::Bf16) rounded_ = DeviceBuffer<bf16>(elements + extra_capacity);
}

void GradientSync::layer_done(int layer, cudaStream_t compute, std::span<float> extra) {
  if (!comm_) return;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    const GradBucket& b = buckets_[i];
    if (b.ready_after_layer != layer) continue;
    ready_[i]->record(compute);
    GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(stream_, *ready_[i], 0));
    // The slices (one per tensor) and, for the last bucket, `extra`.
    std::vector<std::span<float>> parts;
    for (const GradRange& r : b.ranges) parts.emplace_back(grads_ + r.offset, r.count);
    if (layer == kEmbeddingsStage && !extra.empty()) parts.push_back(extra);
    if (precision_ == ReducePrecision::Fp32) {
      // One group per bucket: its parts go out as a single NCCL launch.
      GPUACCEPT_NCCL_CHECK(ncclGroupStart());
      for (std::span<float> p : parts)
        GPUACCEPT_NCCL_CHECK(ncclAllReduce(p.data(), p.data(), p.size(), ncclFloat, ncclAvg, comm_, stream_));
      GPUACCEPT_NCCL_CHECK(ncclGroupEnd());
    } else {
      // Rounded side by side into the bucket's own stretch of rounded_ (the buckets' sizes
      // add up to the flat buffer, extra after the last), so the bucket is one all-reduce.
      bf16* const packed = rounded_.get() + packed_at_[i];
      std::size_t n = 0;
      for (std::span<float> p : parts) {
        cast_to_bf16(packed + n, p.data(), p.size(), stream_);
        n += p.size();
      }
      GPUACCEPT_NCCL_CHECK(ncclAllReduce(packed, packed, n, ncclBfloat16, ncclAvg, comm_, stream_));
      n = 0;
      for (std::span<float> p : parts) {
        cast_to_fp32(p.data(), packed + n, p.size(), stream_);
        n += p.size();
      }
    }
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
