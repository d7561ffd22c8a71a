#include "train/training_checkpoint.h"

#include <chrono>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xxhash.h>

#include "cuda/cuda_check.h"
#include "cuda/nvtx_range.h"

namespace gpuaccept::train {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TrainingCheckpoint::TrainingCheckpoint(World& world, std::filesystem::path root, CheckpointManifest header,
                                       std::vector<DeviceStateTensor> state)
    : world_(world), root_(std::move(root)), header_(std::move(header)), state_(std::move(state)) {
  header_.tensors.clear();
  std::size_t total = 0;
  for (const DeviceStateTensor& t : state_) {
    header_.tensors.push_back({t.name, t.dtype, t.elements});
    mine_.push_back(slice_of(t.elements, world_.size(), world_.rank()));
    // A sharded tensor's slices are the ranks' shards: equal, or the arithmetic would cut a
    // shard in two (the caller pads its shards to one size).
    if (t.sharded && t.elements != mine_.back().count * static_cast<std::uint64_t>(world_.size()))
      throw std::invalid_argument(fmt::format("checkpoint: sharded tensor '{}' of {} elements does not split into {} "
                                              "equal shards", t.name, t.elements, world_.size()));
    at_.push_back(total);
    total += slice_size(mine_.size() - 1);
  }
  staging_ = PinnedBuffer<char>(total);
}

char* TrainingCheckpoint::device_slice(std::size_t i) const {
  const DeviceStateTensor& t = state_[i];
  char* base = static_cast<char*>(t.data);
  return t.sharded ? base : base + mine_[i].first * dtype_size(t.dtype);
}

std::size_t TrainingCheckpoint::slice_size(std::size_t i) const { return mine_[i].count * dtype_size(state_[i].dtype); }

std::uint64_t TrainingCheckpoint::state_bytes() const {
  std::uint64_t b = 0;
  for (const DeviceStateTensor& t : state_) b += t.elements * dtype_size(t.dtype);
  return b;
}

std::uint64_t TrainingCheckpoint::slice_bytes() const { return staging_.bytes(); }

CheckpointSave TrainingCheckpoint::save(int step, cudaStream_t stream) {
  NvtxRange range(fmt::format("checkpoint save step {}", step));
  std::vector<HostSlice> slices;
  for (std::size_t i = 0; i < state_.size(); ++i) slices.push_back({header_.tensors[i], mine_[i], staging_.get() + at_[i]});
  // The copies run inside save_checkpoint's timing (stage_s): they are part of the cost.
  const auto stage = [&] {
    for (std::size_t i = 0; i < state_.size(); ++i)
      GPUACCEPT_CUDA_CHECK(
          cudaMemcpyAsync(staging_.get() + at_[i], device_slice(i), slice_size(i), cudaMemcpyDefault, stream));
    GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));
  };
  return save_checkpoint(world_, root_, header_, step, slices, stage);
}

CheckpointRestore TrainingCheckpoint::restore(ncclComm_t comm, RankRuntime& runtime, cudaStream_t stream,
                                              double timeout_s) {
  NvtxRange range("checkpoint restore");
  const auto started = std::chrono::steady_clock::now();
  CheckpointRestore out;
  out.found = latest_checkpoint(root_, header_.phase);
  if (!out.found.found())
    throw InputError(fmt::format("no checkpoint of phase {} under {}{}", header_.phase, root_.string(),
                                 out.found.passed_over.empty() ? "" : fmt::format(" (passed over: {})", fmt::join(out.found.passed_over, "; "))));
  require_compatible(out.found, header_);
  for (const DeviceStateTensor& t : state_)
    if (t.sharded && out.found.manifest.world_size != world_.size())
      throw InputError(fmt::format(
          "{}: '{}' was saved as {} ranks' shards, and this run has {} ranks: shards are cut per world size, so a "
          "checkpoint with {} restores on {} ranks only (save without it to restore elsewhere)",
          out.found.dir.string(), t.name, out.found.manifest.world_size, world_.size(), t.name,
          out.found.manifest.world_size));
  for (std::size_t i = 0; i < state_.size(); ++i)
    out.bytes_read += read_state_range(out.found, state_[i].name, mine_[i], staging_.get() + at_[i]);
  out.read_s = seconds_since(started);
  for (std::size_t i = 0; i < state_.size(); ++i)
    GPUACCEPT_CUDA_CHECK(
        cudaMemcpyAsync(device_slice(i), staging_.get() + at_[i], slice_size(i), cudaMemcpyDefault, stream));
  if (comm && world_.size() > 1) {
    // Each rank's slice of a replicated tensor to every other rank: one broadcast per owner, in
    // one group, as bytes (any dtype). A sharded tensor's slice stays with its rank.
    const WaitContext ctx{"checkpoint restore: the slices' broadcasts", {}, -1};
    runtime.check(ncclGroupStart(), comm, ctx, "ncclGroupStart");
    for (const DeviceStateTensor& t : state_) {
      if (t.sharded) continue;
      const std::size_t esize = dtype_size(t.dtype);
      for (int r = 0; r < world_.size(); ++r) {
        const SliceRange s = slice_of(t.elements, world_.size(), r);
        if (s.count == 0) continue;
        char* at = static_cast<char*>(t.data) + s.first * esize;
        runtime.check(ncclBroadcast(at, at, s.count * esize, ncclUint8, r, comm, stream), comm, ctx, "ncclBroadcast");
      }
    }
    runtime.check(ncclGroupEnd(), comm, ctx, "ncclGroupEnd");
    CudaEvent done;
    done.record(stream);
    runtime.wait(done, {comm}, ctx, timeout_s);
  } else {
    GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  out.total_s = seconds_since(started);
  return out;
}

std::uint64_t state_checksum(const std::vector<DeviceStateTensor>& state, int world_size, cudaStream_t stream) {
  XXH3_state_t* h = XXH3_createState();
  XXH3_64bits_reset(h);
  for (const DeviceStateTensor& t : state) {
    // A sharded tensor: this rank's slice, its elements / world size (equal shards, by contract).
    const std::size_t elements = t.sharded ? t.elements / static_cast<std::size_t>(world_size) : t.elements;
    const std::size_t bytes = elements * dtype_size(t.dtype);
    std::vector<char> host(bytes);
    GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(host.data(), t.data, bytes, cudaMemcpyDefault, stream));
    GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));
    XXH3_64bits_update(h, host.data(), host.size());
  }
  const std::uint64_t v = XXH3_64bits_digest(h);
  XXH3_freeState(h);
  return v;
}

}  // namespace gpuaccept::train
