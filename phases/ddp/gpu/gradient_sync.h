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
#include "ddp/gpu/kernels.h"
#include "ddp/grad_buckets.h"

namespace gpuaccept::ddp::gpu {

// What the all-reduce carries. Fp32: the gradients as they are (PyTorch DDP's default),
// one NCCL group of a call per slice. Bf16: each bucket's slices rounded to bf16, packed
// side by side, reduced in one call, and the average widened back (PyTorch's
// bf16_compress_hook): half the bytes, so half as long beside the backward pass, for
// about 3 significant digits in the averaged gradient. Every rank gets the same bits either
// way, so replicas stay bitwise equal.
enum class ReducePrecision { Fp32, Bf16 };

class GradientSync {
 public:
  // grads: the flat buffer of `elements`; extra_capacity: the most elements layer_done's
  // `extra` will hold (bf16 needs room for them).
  GradientSync(std::vector<GradBucket> buckets, float* grads, std::size_t elements, ReducePrecision precision,
               std::size_t extra_capacity);

  // The communicator of the next steps (nullptr: training alone, nothing to reduce).
  void set_comm(ncclComm_t comm) { comm_ = comm; }
  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return stream_; }  // where the buckets are reduced

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
  ReducePrecision precision_;
  std::vector<std::size_t> packed_at_;  // per bucket: where its parts start in rounded_
  DeviceBuffer<bf16> rounded_;          // Bf16: every bucket's parts, rounded, packed
  ncclComm_t comm_ = nullptr;
  CudaStream stream_;
  std::vector<std::unique_ptr<CudaEvent>> ready_;  // per bucket: backward produced it
  CudaEvent done_;
  bool launched_ = false;
};

}  // namespace gpuaccept::ddp::gpu
