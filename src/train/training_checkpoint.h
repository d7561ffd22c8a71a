// A training run's checkpoint on the shared filesystem, GPU side, for both training phases
// (ddp: every weight and AdamW's moments; fsdp-lora: the LoRA weights and their moments, and
// with checkpoint.include_base its frozen base's shards). Most of the state is replicated:
// device arrays identical on every rank, of which each rank writes only its 1/N slice
// (train/checkpoint_files.h: write bandwidth scales with the ranks) and a restore reads only
// its slice and fills in the rest from the other ranks over NCCL. A sharded tensor (FSDP's
// base) is held 1/N per rank to begin with: each rank writes and reads its own part.
//
//   save:    device -> pinned host (this rank's slices) -> its file, fsync; rank 0 writes the
//            manifest once every rank's file is on disk (train/checkpoint_save.h)
//   restore: the latest valid checkpoint (a save that did not finish is passed over); this
//            rank's slices read and verified (XXH3) -> pinned -> device; then one grouped
//            ncclBroadcast per rank, from that rank's slice, completes every replica
// The restore may run on another world size (the slices are found by arithmetic) unless the
// checkpoint holds sharded tensors, whose shards (padded per world size) it refuses to re-cut.
// Pinned host memory: this rank's slice of everything (the base's shards included, when saved).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "cuda/cuda_handles.h"
#include "cuda/rank_runtime.h"
#include "train/checkpoint_save.h"
#include "world/world.h"

namespace gpuaccept::train {

// One tensor of the state in device memory, `elements` values of `dtype` in all. Replicated:
// every rank holds all of them, the same, at `data`. Sharded: this rank holds only its slice
// (slice_of(elements, world size, rank), which must be the same size on every rank), at `data`.
struct DeviceStateTensor {
  std::string name;
  void* data = nullptr;
  std::size_t elements = 0;
  Dtype dtype = Dtype::f32;
  bool sharded = false;
};

struct CheckpointRestore {
  FoundCheckpoint found;
  std::uint64_t bytes_read = 0;  // this rank, from files
  double read_s = 0;             // this rank: its slices read and verified
  double total_s = 0;            // until every replica holds the whole state
};

class TrainingCheckpoint {
 public:
  // `header`: the manifest's phase and state (what a resume must match: model, seed, ...);
  // its tensors are taken from `state`. root: the phase's checkpoint directory.
  TrainingCheckpoint(World& world, std::filesystem::path root, CheckpointManifest header,
                     std::vector<DeviceStateTensor> state);

  const std::filesystem::path& root() const { return root_; }
  std::uint64_t state_bytes() const;  // the whole state, all ranks' slices together
  std::uint64_t slice_bytes() const;  // this rank's

  // Collective: every rank saves its slices at `step` (after `stream`'s work so far).
  CheckpointSave save(int step, cudaStream_t stream);
  // Collective: the latest valid checkpoint into the state on every rank. comm: the ranks
  // of `world` in rank order (nullptr with one rank); waits bounded by `runtime`. Throws
  // InputError (no checkpoint, another model, a damaged file: named) or Fault.
  CheckpointRestore restore(ncclComm_t comm, RankRuntime& runtime, cudaStream_t stream, double timeout_s);

 private:
  World& world_;
  std::filesystem::path root_;
  CheckpointManifest header_;
  // Where tensor i's slice lives in device memory, and its size in bytes.
  char* device_slice(std::size_t i) const;
  std::size_t slice_size(std::size_t i) const;

  std::vector<DeviceStateTensor> state_;
  PinnedBuffer<char> staging_;     // this rank's slice of each tensor, back to back
  std::vector<SliceRange> mine_;   // by tensor
  std::vector<std::size_t> at_;    // by tensor: its slice's byte offset in staging_
};

// XXH3 of every state tensor's bytes on this rank (a sharded tensor's: this rank's slice),
// combined (copied to the host: what a resume check compares between the run that never
// stopped and the resumed one).
std::uint64_t state_checksum(const std::vector<DeviceStateTensor>& state, int world_size, cudaStream_t stream);

}  // namespace gpuaccept::train
