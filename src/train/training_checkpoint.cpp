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
    header_.tensors.push_back({t.name, Dtype::f32, t.elements});
    mine_.push_back(slice_of(t.elements, world_.size(), world_.rank()));
    at_.push_back(total);
    total += mine_.back().count;
  }
  staging_ = PinnedBuffer<float>(total);
}

std::uint64_t TrainingCheckpoint::state_bytes() const {
  std::uint64_t b = 0;
  for (const DeviceStateTensor& t : state_) b += t.elements * sizeof(float);
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
      GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(staging_.get() + at_[i], state_[i].data + mine_[i].first,
                                           mine_[i].count * sizeof(float), cudaMemcpyDeviceToHost, stream));
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
  for (std::size_t i = 0; i < state_.size(); ++i)
    out.bytes_read += read_state_range(out.found, state_[i].name, mine_[i], staging_.get() + at_[i]);
  out.read_s = seconds_since(started);
  for (std::size_t i = 0; i < state_.size(); ++i)
    GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(state_[i].data + mine_[i].first, staging_.get() + at_[i],
                                         mine_[i].count * sizeof(float), cudaMemcpyHostToDevice, stream));
  if (comm && world_.size() > 1) {
    // Each rank's slice to every other rank: one broadcast per owner, in one group.
    const WaitContext ctx{"checkpoint restore: the slices' broadcasts", {}, -1};
    runtime.check(ncclGroupStart(), comm, ctx, "ncclGroupStart");
    for (const DeviceStateTensor& t : state_)
      for (int r = 0; r < world_.size(); ++r) {
        const SliceRange s = slice_of(t.elements, world_.size(), r);
        if (s.count == 0) continue;
        runtime.check(ncclBroadcast(t.data + s.first, t.data + s.first, s.count, ncclFloat, r, comm, stream), comm, ctx,
                      "ncclBroadcast");
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

std::uint64_t state_checksum(const std::vector<DeviceStateTensor>& state, cudaStream_t stream) {
  XXH3_state_t* h = XXH3_createState();
  XXH3_64bits_reset(h);
  for (const DeviceStateTensor& t : state) {
    std::vector<float> host(t.elements);
    GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(host.data(), t.data, t.elements * sizeof(float), cudaMemcpyDeviceToHost, stream));
    GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));
    XXH3_64bits_update(h, host.data(), host.size() * sizeof(float));
  }
  const std::uint64_t v = XXH3_64bits_digest(h);
  XXH3_freeState(h);
  return v;
}

}  // namespace gpuaccept::train
