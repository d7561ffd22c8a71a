#include "ddp/gpu/gradient_sync.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "cuda/nvtx_range.h"
#include "train/bf16_cast_kernels.h"

namespace gpuaccept::ddp::gpu {

namespace {

std::size_t aligned_up(std::size_t n) { return (n + kSliceAlign - 1) / kSliceAlign * kSliceAlign; }

// A bucket's parts side by side from the start of its packed stretch, train::kMaxPackedParts a launch.
std::vector<train::PackedParts> pack_plan(const std::vector<std::span<float>>& parts) {
  std::vector<train::PackedParts> launches;
  std::size_t at = 0;
  for (std::span<float> p : parts) {
    if (launches.empty() || launches.back().parts == train::kMaxPackedParts) launches.emplace_back();
    train::PackedParts& l = launches.back();
    l.fp32[l.parts] = p.data();
    l.at[l.parts] = at;
    l.count[l.parts] = p.size();
    ++l.parts;
    at += p.size();
  }
  return launches;
}

}  // namespace

GradientSync::GradientSync(std::vector<GradBucket> buckets, float* grads, std::size_t elements,
                           ReducePrecision precision, std::size_t extra_capacity)
    : buckets_(std::move(buckets)), grads_(grads), precision_(precision), extra_capacity_(extra_capacity) {
  // Each bucket's stretch of rounded_ starts 16-byte aligned, for the kernels' vector loads
  // and the copy engine's shares.
  std::size_t base = 0, held = 0;
  for (const GradBucket& b : buckets_) {
    ready_.push_back(std::make_unique<CudaEvent>());
    packed_at_.push_back(base);
    base += aligned_up(b.elements);
    held += b.elements;
  }
  // plan_grad_buckets puts every element in exactly one bucket; a count that differs means a
  // plan that misses some or holds some twice (its unit tests check which).
  if (held != elements)
    throw std::logic_error(fmt::format("gradient buckets hold {} elements, the buffer {}", held, elements));
  if (precision_ == ReducePrecision::Bf16) rounded_ = DeviceBuffer<bf16>(base + extra_capacity);
}

std::string GradientSync::use_copy_engine(ncclComm_t comm, int rank, int world) {
  if (precision_ != ReducePrecision::Bf16)
    return "ddp.grad_reduce is fp32, and the copy engine averages the packed bf16 buckets only";
  if (world > kMaxAveragedSlices)
    return fmt::format("{} ranks: its average takes at most {}", world, kMaxAveragedSlices);
  std::size_t largest = 0;  // elements of the largest bucket (the last with its extra)
  for (const GradBucket& b : buckets_)
    largest = std::max(largest, b.elements + (b.ready_after_layer == kEmbeddingsStage ? extra_capacity_ : 0));
  share_capacity_ = reduce_share(largest, world, 0).count;
  received_ = DeviceBuffer<bf16>(static_cast<std::size_t>(world - 1) * share_capacity_);
  token_ = DeviceBuffer<float>(1);
  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(token_.get(), 0, sizeof(float), stream_));
  void* const mine[] = {rounded_.get()};
  const std::string why = peers_.open(comm, rank, world, mine, stream_);
  if (!why.empty()) {
    received_ = {};
    return why;
  }
  ce_comm_ = comm;
  rank_ = rank;
  world_ = world;
  return "";
}

void GradientSync::stop_copy_engine() {
  if (!ce_comm_) return;
  peers_.close(ce_comm_, stream_);
  ce_comm_ = nullptr;
  received_ = {};
}

void GradientSync::layer_done(int layer, cudaStream_t compute, std::span<float> extra) {
  if (!comm_) return;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    const GradBucket& b = buckets_[i];
    if (b.ready_after_layer != layer) continue;
    const NvtxRange range(fmt::format("bucket {} all-reduce ({})", i, engine(comm_)));
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
      // Rounded side by side into the bucket's own stretch of rounded_ (each bucket's
      // elements, padded to kSliceAlign; extra after the last's), so the bucket is one all-reduce.
      bf16* const packed = rounded_.get() + packed_at_[i];
      const std::vector<train::PackedParts> launches = pack_plan(parts);
      for (const train::PackedParts& l : launches) train::pack_to_bf16(packed, l, stream_);
      std::size_t n = 0;
      for (std::span<float> p : parts) n += p.size();
      if (comm_ == ce_comm_)
        copy_engine_average(packed_at_[i], n);
      else
        GPUACCEPT_NCCL_CHECK(ncclAllReduce(packed, packed, n, ncclBfloat16, ncclAvg, comm_, stream_));
      for (const train::PackedParts& l : launches) train::unpack_to_fp32(l, packed, stream_);
    }
    launched_ = true;
  }
}

void GradientSync::copy_engine_average(std::size_t at, std::size_t n) {
  bf16* const own = rounded_.get() + at;
  auto peer = [&](int p) { return static_cast<const bf16*>(peers_.at(p, 0)) + at; };
  handshake();  // 1. every rank has packed this bucket
  // 2. The peers' copies of this rank's share, then their average in rank order, in place.
  const GradRange mine = reduce_share(n, world_, rank_);
  Bf16Slices copies;
  copies.count = world_;
  std::size_t k = 0;
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) {
      copies.p[p] = own + mine.offset;
      continue;
    }
    bf16* const to = received_.get() + k++ * share_capacity_;
    if (mine.count > 0)
      GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(to, peer(p) + mine.offset, mine.count * sizeof(bf16),
                                           cudaMemcpyDeviceToDevice, stream_));
    copies.p[p] = to;
  }
  average_bf16(own + mine.offset, copies, mine.count, stream_);
  handshake();  // 3. every share is averaged
  // 4. Every peer's averaged share into place.
  for (int p = 0; p < world_; ++p) {
    const GradRange theirs = reduce_share(n, world_, p);
    if (p == rank_ || theirs.count == 0) continue;
    GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(own + theirs.offset, peer(p) + theirs.offset, theirs.count * sizeof(bf16),
                                         cudaMemcpyDeviceToDevice, stream_));
  }
}

void GradientSync::handshake() {
  GPUACCEPT_NCCL_CHECK(ncclAllReduce(token_.get(), token_.get(), 1, ncclFloat, ncclSum, comm_, stream_));
}

void GradientSync::join(cudaStream_t compute) {
  if (!launched_) return;
  done_.record(stream_);
  GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(compute, done_, 0));
  launched_ = false;
}

}  // namespace gpuaccept::ddp::gpu
