#include "fsdp-lora/gpu/fsdp_weights.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <string>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "cuda/nvtx_range.h"
#include "fsdp-lora/base_checkpoint.h"
#include "fsdp-lora/base_init.h"
#include "train/checksum_kernels.h"

namespace gpuaccept::fsdp::gpu {

namespace {

std::size_t sz(std::uint64_t v) { return static_cast<std::size_t>(v); }

const char* kind_name(WeightKind k) {
  return k == WeightKind::embedding ? "embedding" : k == WeightKind::head ? "head" : "layer";
}

}  // namespace

FsdpWeights::FsdpWeights(const ShardPlan& plan, int rank, ncclComm_t comm, int prefetch_layers, bool offload)
    : plan_(plan), rank_(rank), world_(plan.world_size), comm_(comm), prefetch_(prefetch_layers), offload_(offload),
      gathered_(plan.world_size > 1 || offload) {
  if (rank < 0 || rank >= world_)
    throw std::invalid_argument(fmt::format("FsdpWeights: rank {} outside 0..{}", rank, world_ - 1));
  if (world_ > 1 && !comm) throw std::invalid_argument("FsdpWeights: more than one rank needs a communicator");
  if (prefetch_layers < 1) throw std::invalid_argument("FsdpWeights: prefetch_layers must be at least 1");
  const int L = plan.model.layers;
  // qwen_model.h's order of use in forward_backward.
  schedule_.push_back({WeightKind::embedding, 0});
  for (int l = 0; l < L; ++l) schedule_.push_back({WeightKind::layer, l});
  schedule_.push_back({WeightKind::head, 0});
  for (int l = L - 1; l >= 0; --l) schedule_.push_back({WeightKind::layer, l});

  const std::uint64_t C = static_cast<std::uint64_t>(plan.model.hidden);
  if (offload_) {
    host_layers_ = PinnedBuffer<bf16>(layers_elems());
    host_embedding_ = PinnedBuffer<bf16>(vocab_shard_elems());
    host_head_ = PinnedBuffer<bf16>(vocab_shard_elems());
  } else {
    layers_ = DeviceBuffer<bf16>(layers_elems());
    embedding_ = DeviceBuffer<bf16>(vocab_shard_elems());
    head_ = DeviceBuffer<bf16>(vocab_shard_elems());
  }
  final_norm_ = DeviceBuffer<bf16>(sz(C));
  if (gathered_) {
    for (int i = 0; i <= prefetch_; ++i) {
      layer_buffers_.push_back(std::make_unique<Buffer>());
      layer_buffers_.back()->mem = DeviceBuffer<bf16>(sz(plan.layer_padded_elems));
    }
    vocab_buffer_ = std::make_unique<Buffer>();
    vocab_buffer_->mem = DeviceBuffer<bf16>(static_cast<std::size_t>(world_) * vocab_shard_elems());
  }
}

std::size_t FsdpWeights::layers_elems() const {
  return sz(static_cast<std::uint64_t>(plan_.model.layers) * plan_.layer_shard_elems);
}

std::size_t FsdpWeights::vocab_shard_elems() const {
  return sz(static_cast<std::uint64_t>(plan_.vocab_rows_per_rank) * static_cast<std::uint64_t>(plan_.model.hidden));
}

FsdpWeights::~FsdpWeights() {
  // The prefetched gathers of a step that never came may still run into the buffers.
  cudaStreamSynchronize(comm_stream_);
}

FsdpWeights::Parts FsdpWeights::parts() {
  return {layers_at(), layers_elems(), embedding_at(), head_at(), vocab_shard_elems(), final_norm_.get(), final_norm_.size()};
}

std::uint64_t FsdpWeights::device_bytes() const {
  std::uint64_t total = layers_.bytes() + embedding_.bytes() + head_.bytes() + final_norm_.bytes();
  for (const auto& b : layer_buffers_) total += b->mem.bytes();
  if (vocab_buffer_) total += vocab_buffer_->mem.bytes();
  return total;
}

std::uint64_t FsdpWeights::base_checksum(cudaStream_t stream) const {
  DeviceBuffer<std::uint64_t> sums(4);
  // With offload the kernel reads the host shards in place (unified addressing).
  const std::pair<const bf16*, std::size_t> parts[] = {
      {layers_at(), layers_elems()}, {embedding_at(), vocab_shard_elems()}, {head_at(), vocab_shard_elems()},
      {final_norm_.get(), final_norm_.size()}};
  for (std::size_t i = 0; i < std::size(parts); ++i)
    train::checksum_device(sums.get() + i, parts[i].first, parts[i].second * sizeof(bf16), stream);
  std::uint64_t host[4] = {};
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(host, sums.get(), sizeof host, cudaMemcpyDeviceToHost, stream));
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Each part's checksum rotated by its place, so two parts swapping contents still shows.
  std::uint64_t all = 0;
  for (int i = 0; i < 4; ++i) all ^= (host[i] << (16 * i)) | (host[i] >> ((64 - 16 * i) % 64));
  return all;
}

void FsdpWeights::init_random(std::uint64_t seed, cudaStream_t s) {
  NvtxRange range("fsdp init_random");
  // Padding (the flat layer's tail, rows past the vocabulary) reads 0. The host shards of
  // offload are cleared here, before the kernels below write into them through unified addressing.
  if (offload_) {
    GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(s));  // nothing of s may still write them
    std::memset(host_layers_.get(), 0, layers_elems() * sizeof(bf16));
    std::memset(host_embedding_.get(), 0, vocab_shard_elems() * sizeof(bf16));
    std::memset(host_head_.get(), 0, vocab_shard_elems() * sizeof(bf16));
  } else {
    GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(layers_.get(), 0, layers_.bytes(), s));
    GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(embedding_.get(), 0, embedding_.bytes(), s));
    GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(head_.get(), 0, head_.bytes(), s));
  }
  for (int l = 0; l < plan_.model.layers; ++l)
    for (const InitPiece& p : layer_init_pieces(plan_, rank_, l))
      init_base_piece(layers_at() + sz(static_cast<std::uint64_t>(l) * plan_.layer_shard_elems), p, seed, s);
  for (const InitPiece& p : vocab_init_pieces(plan_, rank_, kEmbeddingTensor)) init_base_piece(embedding_at(), p, seed, s);
  for (const InitPiece& p : vocab_init_pieces(plan_, rank_, kHeadTensor)) init_base_piece(head_at(), p, seed, s);
  init_base_piece(final_norm_.get(), {kFinalNormTensor, 0, static_cast<std::uint64_t>(plan_.model.hidden), 0, 0.0f}, seed,
                  s);
}

void FsdpWeights::init_from_checkpoint(const train::SafetensorsCheckpoint& checkpoint, cudaStream_t s,
                                       const std::function<void(int, int)>& progress) {
  NvtxRange range("fsdp init_from_checkpoint");
  struct Region {
    ShardRegion region;
    int layer;
    bf16* dst;
  };
  std::vector<Region> regions;
  for (int l = 0; l < plan_.model.layers; ++l)
    regions.push_back({ShardRegion::layers, l, layers_at() + sz(static_cast<std::uint64_t>(l) * plan_.layer_shard_elems)});
  regions.push_back({ShardRegion::embedding, 0, embedding_at()});
  regions.push_back({ShardRegion::head, 0, head_at()});
  regions.push_back({ShardRegion::final_norm, 0, final_norm_.get()});
  std::uint64_t largest = 0;
  for (const Region& r : regions) largest = std::max(largest, region_elems(plan_, r.region));
  // One region at a time through one pinned buffer: host memory stays at the largest region
  // (the embedding's rows), not the rank's whole base.
  PinnedBuffer<std::uint16_t> staging(sz(largest));
  int done = 0;
  for (const Region& r : regions) {
    const std::uint64_t n = region_elems(plan_, r.region);
    read_base_region(checkpoint, plan_, rank_, r.region, r.layer, staging.get());
    // Default: the destination is host memory with offload.
    GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(r.dst, staging.get(), sz(n) * sizeof(bf16), cudaMemcpyDefault, s));
    GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(s));  // before the buffer takes the next region
    if (progress) progress(++done, static_cast<int>(regions.size()));
  }
}

const bf16* FsdpWeights::shard_of(const Use& use) const {
  if (use.kind == WeightKind::embedding) return embedding_at();
  if (use.kind == WeightKind::head) return head_at();
  return layers_at() + sz(static_cast<std::uint64_t>(use.layer) * plan_.layer_shard_elems);
}

const bf16* FsdpWeights::peer_shard_of(int p, const Use& use) const {
  // peers_' allocations, as use_copy_engine() listed them: layers, embedding, head.
  if (use.kind == WeightKind::embedding) return static_cast<const bf16*>(peers_.at(p, 1));
  if (use.kind == WeightKind::head) return static_cast<const bf16*>(peers_.at(p, 2));
  return static_cast<const bf16*>(peers_.at(p, 0)) + sz(static_cast<std::uint64_t>(use.layer) * plan_.layer_shard_elems);
}

std::string FsdpWeights::use_copy_engine(bool one_node) {
  if (offload_) return "offload: cpu keeps the shards in host memory, which another process cannot map";
  if (world_ == 1) return "one rank: nothing to gather";
  if (!one_node) return "the ranks span several nodes";
  void* const mine[] = {layers_.get(), embedding_.get(), head_.get()};
  return peers_.open(comm_, rank_, world_, mine, comm_stream_);
}

void FsdpWeights::stop_copy_engine() { peers_.close(comm_, comm_stream_); }

const char* FsdpWeights::gather_engine() const {
  if (!gathered_) return "none: one rank holds the whole base";
  if (peers_.is_open()) return "copy engine";
  if (offload_) return world_ > 1 ? "host-to-device copy, then NCCL" : "host-to-device copy";
  return "NCCL";
}

std::size_t FsdpWeights::shard_elems(const Use& use) const {
  if (use.kind == WeightKind::layer) return sz(plan_.layer_shard_elems);
  return vocab_shard_elems();
}

std::unique_ptr<CudaEvent> FsdpWeights::event() {
  if (spare_.empty()) return std::make_unique<CudaEvent>();
  auto e = std::move(spare_.back());
  spare_.pop_back();
  return e;
}

void FsdpWeights::issue_ahead(long long current) {
  for (;;) {
    const long long u = issued_;
    // Decoder layers among the uses after `current` up to u: at most prefetch_ ahead.
    if (u > current) {
      int layers_ahead = 0;
      for (long long j = current + 1; j <= u; ++j) layers_ahead += use_at(j).kind == WeightKind::layer ? 1 : 0;
      if (layers_ahead > prefetch_) return;
    }
    const Use& use = use_at(u);
    Buffer* b = use.kind == WeightKind::layer
                    ? layer_buffers_[static_cast<std::size_t>(layer_gathers_ % static_cast<long long>(layer_buffers_.size()))].get()
                    : vocab_buffer_.get();
    // Its last user has not released it yet (or its gather is still waiting to be used).
    if (b->busy) {
      if (u == current)
        throw std::logic_error(fmt::format("FsdpWeights: the buffer for use {} ({} {}) is still held", u,
                                           kind_name(use.kind), use.layer));
      return;
    }
    gather(u, use.kind == WeightKind::layer ? static_cast<int>(layer_gathers_ % static_cast<long long>(layer_buffers_.size())) : -1);
  }
}

void FsdpWeights::gather(long long u, int buffer) {
  const Use& use = use_at(u);
  Buffer* b = buffer >= 0 ? layer_buffers_[static_cast<std::size_t>(buffer)].get() : vocab_buffer_.get();
  const char* how = peers_.is_open() ? "copy-engine gather" : "all_gather";
  NvtxRange range(use.kind == WeightKind::layer ? fmt::format("{} layer {}", how, use.layer)
                                                : fmt::format("{} {}", how, kind_name(use.kind)));
  // The buffer's previous reader on the compute stream must be done before it is overwritten.
  if (b->freed_once) GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, b->free.get(), 0));
  Timed t{event(), event(), 0, true};
  const std::size_t count = shard_elems(use);
  t.bytes = static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(world_) * sizeof(bf16);
  t.start->record(comm_stream_);
  if (offload_) {
    // This rank's shard from the host into its own slot, then the gather in place.
    bf16* mine = b->mem.get() + static_cast<std::size_t>(rank_) * count;
    GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(mine, shard_of(use), count * sizeof(bf16), cudaMemcpyHostToDevice, comm_stream_));
    if (world_ > 1) GPUACCEPT_NCCL_CHECK(ncclAllGather(mine, b->mem.get(), count, ncclBfloat16, comm_, comm_stream_));
  } else if (peers_.is_open()) {
    // Each rank's shard into its slot, in rank order, by the copy engine (its own too).
    for (int p = 0; p < world_; ++p)
      GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(b->mem.get() + static_cast<std::size_t>(p) * count, peer_shard_of(p, use),
                                           count * sizeof(bf16), cudaMemcpyDeviceToDevice, comm_stream_));
  } else {
    GPUACCEPT_NCCL_CHECK(ncclAllGather(shard_of(use), b->mem.get(), count, ncclBfloat16, comm_, comm_stream_));
  }
  t.end->record(comm_stream_);
  b->ready.record(comm_stream_);
  b->busy = true;
  timed_.push_back(std::move(t));
  pending_.push_back(b);
  ++issued_;
  if (use.kind == WeightKind::layer) ++layer_gathers_;
}

const bf16* FsdpWeights::acquire(WeightKind kind, int layer, cudaStream_t stream) {
  const Use& want = use_at(next_use_);
  if (holding_ || want.kind != kind || (kind == WeightKind::layer && want.layer != layer))
    throw std::logic_error(fmt::format("FsdpWeights: acquire({} {}) out of order: expected {} {}{}", kind_name(kind), layer,
                                       kind_name(want.kind), want.layer, holding_ ? " after a release" : ""));
  holding_ = true;
  if (kind == WeightKind::head) {
    if (head_marks_used_ == static_cast<int>(head_marks_.size())) head_marks_.push_back(std::make_unique<CudaEvent>());
    head_marks_[static_cast<std::size_t>(head_marks_used_++)]->record(stream);
  }
  if (!gathered_) return shard_of(want);  // one rank, on the GPU: the shard is the whole tensor

  issue_ahead(next_use_);
  Buffer* b = pending_.front();
  // Exposed communication: from the compute stream's arrival here to the gather's end.
  Timed t{event(), event(), 0, false};
  t.start->record(stream);
  GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(stream, b->ready.get(), 0));
  t.end->record(stream);
  timed_.push_back(std::move(t));
  return b->mem.get();
}

void FsdpWeights::release(WeightKind kind, int layer, cudaStream_t stream) {
  if (!holding_) throw std::logic_error(fmt::format("FsdpWeights: release({} {}) without acquire", kind_name(kind), layer));
  holding_ = false;
  ++next_use_;
  if (!gathered_) return;
  Buffer* b = pending_.front();
  pending_.pop_front();
  b->free.record(stream);
  b->freed_once = true;
  b->busy = false;
  // A gather held back because this buffer was in use can go now.
  issue_ahead(next_use_);
}

GatherStats FsdpWeights::take_stats() {
  GatherStats s;
  while (!timed_.empty()) {
    Timed& t = timed_.front();
    const cudaError_t rc = cudaEventQuery(t.end->get());
    if (rc == cudaErrorNotReady) break;
    GPUACCEPT_CUDA_CHECK(rc);
    const float ms = t.end->elapsed_ms_since(*t.start);
    if (t.gather) {
      ++s.gathers;
      s.gather_ms += ms;
      s.bytes += t.bytes;
    } else {
      s.exposed_ms += ms;
    }
    spare_.push_back(std::move(t.start));
    spare_.push_back(std::move(t.end));
    timed_.pop_front();
  }
  return s;
}

}  // namespace gpuaccept::fsdp::gpu
