// The LoRA gradients' all-reduce in buckets (lora_buckets.h), each launched as soon as the
// step's last backward has finished the bucket's lowest layer, so the reduction of the upper
// layers overlaps the backward of the lower ones and only layer 0's bucket is left after it.
// The reductions go on FsdpWeights' communication stream, between its all-gathers: one
// ordered sequence of collectives on one communicator, the same on every rank (a second stream
// on the same communicator could let two ranks run them in different orders, and hang).
//
//   LoraGradReduce reduce(plan_lora_buckets(layout.layer_starts(), elements), grads, runtime);
//   reduce.begin(comm, ranks, scatter, comm_stream, ctx);  // before the last micro-batch
//   model.enqueue_forward_backward(..., [&](int l) { reduce.layer_done(l, compute); });
//   reduce.join(compute);                                 // compute waits for every bucket
#pragma once

#include <cstddef>
#include <vector>

#include <nccl.h>

#include "cuda/cuda_handles.h"
#include "cuda/rank_runtime.h"
#include "fsdp-lora/lora_buckets.h"

namespace gpuaccept::fsdp {

class LoraGradReduce {
 public:
  // grads: the flat fp32 gradient buffer the buckets index; summed in place (ncclSum: each
  // micro-batch's backward was already scaled by 1 / (ranks x micro-batches)).
  LoraGradReduce(std::vector<LoraBucket> buckets, float* grads, RankRuntime& runtime);

  // This step's reductions go to `comm` (of `ranks` ranks) on `comm_stream`; ctx names them
  // in a Fault. scatter (fsdp_lora.grad_reduce: reduce_scatter): each bucket's sum lands only
  // on the ranks that own its parts (owned_parts, lora_buckets.h: one ncclReduce per owner,
  // grouped), not on every rank.
  void begin(ncclComm_t comm, int ranks, bool scatter, cudaStream_t comm_stream, const WaitContext& ctx);
  // Backward has enqueued layer `layer` on `compute` (layers come L-1 .. 0): launches the
  // bucket whose lowest layer it is, after `compute`'s work so far.
  void layer_done(int layer, cudaStream_t compute);
  // `compute` waits until every bucket is reduced. Throws std::logic_error when backward did
  // not reach every bucket (a bucket left out would leave the ranks' gradients apart).
  void join(cudaStream_t compute);

  const std::vector<LoraBucket>& buckets() const { return buckets_; }

 private:
  std::vector<LoraBucket> buckets_;
  float* grads_;
  std::size_t total_;  // elements in the flat buffer (the buckets' end)
  RankRuntime& runtime_;
  ncclComm_t comm_ = nullptr;
  int ranks_ = 1;
  bool scatter_ = false;
  cudaStream_t comm_stream_ = nullptr;
  WaitContext ctx_;
  std::size_t next_ = 0;  // the next bucket to launch this step
  CudaEvent ready_;       // re-recorded per bucket: each wait takes the record before it
  CudaEvent reduced_;
};

}  // namespace gpuaccept::fsdp
