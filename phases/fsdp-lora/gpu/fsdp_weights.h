// The frozen base sharded FSDP-style across the ranks of a communicator, handed to the model
// layer by layer (a WeightSource, qwen_model.h).
//
// Each rank holds, as ShardPlan (shard_plan.h) cuts them: 1/N of every decoder layer's flat
// buffer, rows_per_rank rows of the embedding and of the head, and the whole final norm. When the
// model acquires a layer, the full flat layer is all-gathered (ncclAllGather on a communication
// stream of this class's own) into one of prefetch_layers + 1 rotating layer buffers; the
// embedding and the head share one full-vocabulary buffer (they are never in use at once). The
// model's order of use is fixed (qwen_model.h: E, L0 .. L(L-1), H, L(L-1) .. L0 per
// forward_backward), so acquire() also issues the gathers of the next uses, up to
// prefetch_layers decoder layers ahead, and the communication of layer l+1 runs while layer l
// computes. The compute stream waits on the gather's event only; release() records an event on
// the compute stream after the last read, which the next gather into that buffer waits for.
// With one rank nothing is gathered: acquire() returns the shard itself (it is the full layer).
//
// Offload (fsdp_lora.offload: cpu): the layers', embedding's and head's shards live in pinned
// host memory instead (the final norm stays on the GPU). A gather then starts with a copy of
// this rank's shard from the host into its own slot of the gather buffer, on the communication
// stream, and the all-gather runs in place (sendbuff = recvbuff + rank x count, as NCCL allows);
// with one rank the copy is the whole of it. So the copy runs ahead with the gather, and no
// staging buffer is needed (memory_plan.h). Everything else reads the host shards through
// unified addressing (cudaMallocHost memory is device-accessible): the checksum and the random
// init run their kernels on them, slower but the same bits.
//
// Copy-engine gathers (fsdp_lora.gather: copy_engine; src/cuda/peer_memory.h): on one node, after
// use_copy_engine() every gather copies each rank's shard straight from that rank's GPU memory
// (CUDA IPC, cudaMemcpyAsync on the communication stream) instead of ncclAllGather: the same
// bytes in the same places, without NCCL's kernels beside the compute. stop_copy_engine() goes
// back to NCCL; it must come before any rank writes its shards again or frees them.
//
// Every rank issues the same gathers in the same order (the decisions depend only on the order
// of use, never on timing), as NCCL requires of one communicator. Anything else the caller runs
// on this communicator must go on comm_stream(), so the order stays one sequence.
//
// Timing (CUDA events): the time each all-gather took on the communication stream, and the time
// the compute stream stood waiting for one (exposed), collected by take_stats() once complete.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include <nccl.h>

#include "cuda/cuda_handles.h"
#include "cuda/peer_memory.h"
#include "fsdp-lora/gpu/qwen_model.h"
#include "fsdp-lora/shard_plan.h"
#include "train/safetensors_reader.h"

namespace gpuaccept::fsdp::gpu {

struct GatherStats {
  int gathers = 0;             // all-gathers completed since the last take_stats()
  double gather_ms = 0;        // their summed duration on the communication stream
  double exposed_ms = 0;       // time the compute stream waited for a gather
  std::uint64_t bytes = 0;     // bytes they assembled (full buffers)
};

class FsdpWeights final : public WeightSource {
 public:
  // comm: the ranks the base is sharded over (plan.world_size of them; nullptr when 1), rank
  // this one's index in it; offload: the shards in pinned host memory (above). Allocates the
  // shards and the gather buffers (nothing filled yet).
  FsdpWeights(const ShardPlan& plan, int rank, ncclComm_t comm, int prefetch_layers, bool offload = false);
  ~FsdpWeights() override;  // waits for the gathers in flight (all ranks issued them)
  FsdpWeights(const FsdpWeights&) = delete;
  FsdpWeights& operator=(const FsdpWeights&) = delete;

  // Random base (base_init.h): this rank's part of every tensor, the same bits for any N.
  void init_random(std::uint64_t seed, cudaStream_t stream);
  // The base from a Hugging Face checkpoint (base_checkpoint.h, checked by the caller): this
  // rank's pieces read region by region into one pinned buffer and copied up as they are laid
  // out on the GPU. Synchronizes `stream`; `progress` (may be empty) after each region, with
  // the regions done and their number.
  void init_from_checkpoint(const train::SafetensorsCheckpoint& checkpoint, cudaStream_t stream,
                            const std::function<void(int done, int total)>& progress = {});

  // Collective over the communicator, after every rank's shards are filled and synchronized:
  // gathers by copy engine from now on. Returns "" when on, otherwise why not (the same on
  // every rank; gathers stay NCCL's): offloaded shards, one rank, ranks on several nodes
  // (one_node false), or a rank that could not map another's memory.
  std::string use_copy_engine(bool one_node);
  // Collective: waits for the copies in flight, unmaps the other ranks' shards, every rank
  // past the same point; gathers by NCCL from now on. Nothing to do when not on.
  void stop_copy_engine();
  // How a gather assembles a layer now, for logs and records.
  const char* gather_engine() const;

  const bf16* final_norm() const { return final_norm_.get(); }  // (C), replicated
  const ShardPlan& plan() const { return plan_; }
  cudaStream_t comm_stream() const { return comm_stream_; }

  // WeightSource. acquire() throws std::logic_error when the call is not the next in the fixed
  // order (forward_only is not supported: its order differs).
  const bf16* acquire(WeightKind kind, int layer, cudaStream_t stream) override;
  void release(WeightKind kind, int layer, cudaStream_t stream) override;

  // The compute stream's event at the head's acquire, one per forward_backward since
  // begin_step(): where forward ends and backward begins, for the step's timing split.
  void begin_step() { head_marks_used_ = 0; }
  const CudaEvent& head_mark(int i) const { return *head_marks_.at(static_cast<std::size_t>(i)); }
  int head_marks() const { return head_marks_used_; }

  // Gathers and waits completed since the last call; never blocks (those still running are
  // counted by a later call).
  GatherStats take_stats();

  // This rank's part of the base, writable (a checkpoint restore writes it back): every layer's
  // shard back to back, its rows of the embedding and of the head (padded to one size on every
  // rank), and the replicated final norm. Element counts are this rank's. With offload the
  // first three are pinned host memory: copy with cudaMemcpyDefault.
  struct Parts {
    bf16* layers;
    std::size_t layers_elems;
    bf16 *embedding, *head;
    std::size_t vocab_elems;  // each of the two
    bf16* final_norm;
    std::size_t final_norm_elems;
  };
  Parts parts();

  std::uint64_t device_bytes() const;  // shards and gather buffers
  // A checksum of everything this rank holds of the base (every layer shard, its embedding and
  // head rows, the final norm; train/checksum_kernels.h), computed on the GPU; synchronizes
  // `stream`. The base is frozen: the same value before and after training, or it was written.
  std::uint64_t base_checksum(cudaStream_t stream) const;

 private:
  struct Use {
    WeightKind kind;
    int layer;
  };
  struct Buffer {
    DeviceBuffer<bf16> mem;
    CudaEvent ready;   // on the communication stream: its gather is complete
    CudaEvent free;    // on the compute stream: the last reader is done
    bool freed_once = false;
    bool busy = false;  // gathered or in use, not yet released
  };
  struct Timed {
    std::unique_ptr<CudaEvent> start, end;
    std::uint64_t bytes = 0;
    bool gather = true;  // or a wait on the compute stream
  };

  const Use& use_at(long long u) const { return schedule_[static_cast<std::size_t>(u % static_cast<long long>(schedule_.size()))]; }
  const bf16* shard_of(const Use& use) const;
  const bf16* peer_shard_of(int p, const Use& use) const;  // rank p's, through peers_
  std::size_t shard_elems(const Use& use) const;
  // Issues the gathers from issued_ on while they are within prefetch_layers decoder layers
  // after use `current` and their buffer is free; in order, so every rank issues the same ones.
  void issue_ahead(long long current);
  void gather(long long u, int buffer);
  std::unique_ptr<CudaEvent> event();

  ShardPlan plan_;
  int rank_, world_;
  ncclComm_t comm_;
  int prefetch_;
  std::vector<Use> schedule_;  // one forward_backward's order of use

  bool offload_;
  bool gathered_;  // uses go through the gather buffers: N > 1, or offload

  // This rank's shards, on the GPU or (offload) in pinned host memory; one of each pair is empty.
  DeviceBuffer<bf16> layers_;      // (L, layer_shard_elems): this rank's shard of every layer
  DeviceBuffer<bf16> embedding_;   // (rows_per_rank, C)
  DeviceBuffer<bf16> head_;        // (rows_per_rank, C)
  PinnedBuffer<bf16> host_layers_, host_embedding_, host_head_;
  DeviceBuffer<bf16> final_norm_;  // (C)
  bf16* layers_at() const { return offload_ ? host_layers_.get() : layers_.get(); }
  bf16* embedding_at() const { return offload_ ? host_embedding_.get() : embedding_.get(); }
  bf16* head_at() const { return offload_ ? host_head_.get() : head_.get(); }
  std::size_t layers_elems() const;
  std::size_t vocab_shard_elems() const;
  std::vector<std::unique_ptr<Buffer>> layer_buffers_;  // prefetch + 1 full padded layers (gathered_)
  std::unique_ptr<Buffer> vocab_buffer_;                // (N x rows_per_rank, C) (gathered_)
  CudaStream comm_stream_;
  PeerMemory peers_;  // the other ranks' layers, embedding and head shards, mapped (copy engine)

  long long next_use_ = 0;  // the use the next acquire() must be
  long long issued_ = 0;    // uses whose gather has been issued
  long long layer_gathers_ = 0;
  std::deque<Buffer*> pending_;  // buffers of uses next_use_ .. issued_ - 1, in order
  bool holding_ = false;         // between acquire() and release()

  std::deque<Timed> timed_;                        // in issue order per stream
  std::vector<std::unique_ptr<CudaEvent>> spare_;  // events to reuse
  std::vector<std::unique_ptr<CudaEvent>> head_marks_;
  int head_marks_used_ = 0;
};

}  // namespace gpuaccept::fsdp::gpu
