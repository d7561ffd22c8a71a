#include "fsdp-lora/lora_grad_reduce.h"

#include <stdexcept>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "cuda/nvtx_range.h"

namespace gpuaccept::fsdp {

LoraGradReduce::LoraGradReduce(std::vector<LoraBucket> buckets, float* grads, RankRuntime& runtime)
    : buckets_(std::move(buckets)), grads_(grads), total_(0), runtime_(runtime) {
  if (buckets_.empty()) throw std::invalid_argument("LoraGradReduce: no buckets");
  total_ = buckets_.front().offset + buckets_.front().count;  // the first bucket holds the top layer
}

void LoraGradReduce::begin(ncclComm_t comm, int ranks, bool scatter, cudaStream_t comm_stream, const WaitContext& ctx) {
  comm_ = comm;
  ranks_ = ranks;
  scatter_ = scatter;
  comm_stream_ = comm_stream;
  ctx_ = ctx;
  next_ = 0;
}

void LoraGradReduce::layer_done(int layer, cudaStream_t compute) {
  if (next_ >= buckets_.size() || buckets_[next_].low_layer != layer) return;
  const LoraBucket& b = buckets_[next_];
  NvtxRange range(fmt::format("LoRA gradients {}, layers {}-{}", scatter_ ? "reduce to owners" : "all_reduce",
                              b.low_layer, b.high_layer));
  ready_.record(compute);
  GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, ready_.get(), 0));
  if (!scatter_) {
    runtime_.check(ncclAllReduce(grads_ + b.offset, grads_ + b.offset, b.count, ncclFloat, ncclSum, comm_, comm_stream_),
                   comm_, ctx_, "ncclAllReduce of the LoRA gradients");
  } else {
    // In place on each owner (sendbuff == recvbuff); the others' recvbuff is not written.
    runtime_.check(ncclGroupStart(), comm_, ctx_, "ncclGroupStart of the LoRA gradients' reduce");
    for (const OwnedPart& p : owned_parts(b.offset, b.count, total_, ranks_, kLoraSliceAlign))
      runtime_.check(ncclReduce(grads_ + p.offset, grads_ + p.offset, p.count, ncclFloat, ncclSum, p.rank, comm_,
                                comm_stream_),
                     comm_, ctx_, "ncclReduce of the LoRA gradients");
    runtime_.check(ncclGroupEnd(), comm_, ctx_, "ncclGroupEnd of the LoRA gradients' reduce");
  }
  ++next_;
}

void LoraGradReduce::join(cudaStream_t compute) {
  if (next_ != buckets_.size())
    throw std::logic_error(fmt::format("LoraGradReduce: {} of {} buckets launched this step (backward stopped at "
                                       "layer {}?)",
                                       next_, buckets_.size(), next_ < buckets_.size() ? buckets_[next_].low_layer : -1));
  reduced_.record(comm_stream_);
  GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(compute, reduced_.get(), 0));
}

}  // namespace gpuaccept::fsdp
