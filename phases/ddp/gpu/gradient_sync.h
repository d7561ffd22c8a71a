// Data parallelism's communication: each gradient bucket (../grad_buckets.h) is averaged
// over the communicator on a stream of its own, as soon as the backward pass has finished the
// bucket's layers, so the reduction of layer l overlaps the backward pass of layers l-1 .. 0.
//
// Two ways to move the bytes (ddp.all_reduce):
//   nccl         ncclAllReduce(ncclAvg): NCCL's kernels on some of the SMs, beside the
//                backward pass's, which slow down while they run.
//   copy_engine  (one node, bf16 buckets) a reduce-scatter and an all-gather made of copies by
//                the copy engines between the ranks' packed buckets, mapped with CUDA IPC
//                (cuda/peer_memory.h), and one small kernel on this rank's share:
//                  1. handshake: every rank has packed the bucket;
//                  2. each rank copies its share (grad_buckets.h: reduce_share) out of every
//                     peer's bucket and averages the W copies in rank order (average_bf16);
//                  3. handshake: every share is averaged;
//                  4. each rank copies every peer's averaged share into its own bucket.
//                A handshake is an ncclAllReduce of one float: a one-block kernel that
//                completes on every rank once all have reached it (79 us on average on two
//                H100s, most of it waiting for the peer). No faster than NCCL there
//                (docs/performance-history.md), so not the default. Handshakes by stream memory
//                operations instead (no kernel: commit a956966) made the backward shorter on
//                four H200s but the wait for the slowest rank longer, no faster either.
//                What keeps a rank from packing the next step's buckets while a peer still
//                copies out of this step's is the step's first collective, the embedding rows'
//                marks (Trainer::step, gpu/embedding_rows.h): a peer's compute stream joins
//                its copies (join()) before it queues the next step's marks all-reduce, and
//                this stream waits for that all-reduce (rows.wait) before any bucket. Whoever
//                moves the marks earlier in the step, or steps without them, must add a
//                handshake at the start of the step.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nccl.h>

#include "cuda/cuda_handles.h"
#include "cuda/peer_memory.h"
#include "ddp/gpu/kernels.h"
#include "ddp/grad_buckets.h"

namespace gpuaccept::ddp::gpu {

// What the all-reduce carries. Fp32: the gradients as they are (PyTorch DDP's default),
// one NCCL group of a call per slice. Bf16: each bucket's slices rounded to bf16, packed
// side by side, reduced in one call, and the average widened back (PyTorch's
// bf16_compress_hook): half the bytes, so half as long beside the backward pass, for
// about 3 significant digits in the averaged gradient. Every rank gets the same bits either
// way, so replicas stay bitwise equal. The pack and unpack kernels run on this class's stream,
// beside the backward pass; on the compute stream instead they gained nothing on four H200s
// (docs/performance-history.md, 2026-11-26 21:36).
enum class ReducePrecision { Fp32, Bf16 };

class GradientSync {
 public:
  // grads: the flat buffer of `elements`; extra_capacity: the most elements layer_done's
  // `extra` will hold (bf16 needs room for them).
  GradientSync(std::vector<GradBucket> buckets, float* grads, std::size_t elements, ReducePrecision precision,
               std::size_t extra_capacity);

  // The communicator of the next steps (nullptr: training alone, nothing to reduce).
  void set_comm(ncclComm_t comm) { comm_ = comm; }
  // Collective over `comm` (this rank `rank` of `world`, all on one node): maps every rank's
  // packed buckets, so that the steps on `comm` average them by copy engine. Returns "" when
  // they will, otherwise why not (the same on every rank; they keep using NCCL).
  std::string use_copy_engine(ncclComm_t comm, int rank, int world);
  // Collective over the communicator use_copy_engine() mapped: once it returns, no rank
  // copies out of another's buckets (which may then be freed). Nothing without the mapping.
  void stop_copy_engine();
  // "NCCL" or "copy engine": how the buckets of a step on `comm` are averaged.
  const char* engine(ncclComm_t comm) const { return comm && comm == ce_comm_ ? "copy engine" : "NCCL"; }
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
  // Steps 1-4 above for the bucket packed at rounded_[at, at + n).
  void copy_engine_average(std::size_t at, std::size_t n);
  void handshake();

  std::vector<GradBucket> buckets_;
  float* grads_;
  ReducePrecision precision_;
  std::size_t extra_capacity_;
  std::vector<std::size_t> packed_at_;  // per bucket: where its parts start in rounded_
  DeviceBuffer<bf16> rounded_;          // Bf16: every bucket's parts, rounded, packed
  ncclComm_t comm_ = nullptr;
  CudaStream stream_;
  std::vector<std::unique_ptr<CudaEvent>> ready_;  // per bucket: backward produced it
  CudaEvent done_;
  bool launched_ = false;
  // The copy engine's: the communicator whose ranks mapped each other's rounded_, this rank's
  // place in it, every rank's rounded_, the peers' copies of this rank's share (world - 1,
  // share_capacity_), and the float the handshakes all-reduce.
  ncclComm_t ce_comm_ = nullptr;
  int rank_ = 0, world_ = 1;
  PeerMemory peers_;
  std::size_t share_capacity_ = 0;
  DeviceBuffer<bf16> received_;
  DeviceBuffer<float> token_;
};

}  // namespace gpuaccept::ddp::gpu
