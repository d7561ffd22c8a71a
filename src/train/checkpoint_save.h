// Saving a training checkpoint, collectively over the job's ranks (CPU side; the GPU phases
// stage their device state into host memory first: train/training_checkpoint.h).
//
//   1. rank 0 makes <root>/step-NNNNNNNN/ (a manifest left there by an earlier save of the
//      same step is removed first: the directory is not a checkpoint until this save ends);
//   2. every rank writes and fsyncs its file (train/checkpoint_files.h) at once;
//   3. rank 0 gathers every rank's entry and, only when all succeeded, writes manifest.json
//      atomically (train/checkpoint_manifest.h): the checkpoint is valid from that rename on.
// A rank that fails (a full filesystem) or never reports (killed: World's gather fails at its
// deadline) leaves no manifest, so the previous checkpoint stays the latest valid one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "train/checkpoint_files.h"
#include "train/checkpoint_manifest.h"
#include "world/world.h"

namespace gpuaccept::train {

struct RankWrite {
  int rank = 0;
  std::string host;
  std::uint64_t bytes = 0;
  double stage_s = 0;  // getting the state into host memory (GPU: device to host copies)
  double write_s = 0;  // its file: open to fsync done
  double fsync_s = 0;  // of write_s, the fsync (the rest: write_safetensors' hashing, copying, early writeback)
  std::string error;   // "" when written
};

struct CheckpointSave {
  bool complete = false;  // the manifest was written: a valid checkpoint
  std::filesystem::path dir;
  std::string error;        // why not complete (every rank learns rank 0's account)
  double consistent_s = 0;  // from the start (all ranks there) to the manifest on disk
  RankWrite mine;
  std::vector<RankWrite> ranks;  // rank 0: every rank's, by rank
};

// `header`: the manifest's phase, state and tensors (step, world size, files, job and time are
// filled in here). `stage`: called on every rank before its write, timed as stage_s (may be
// empty). Throws only what World's collectives throw (a peer lost: the gather fails).
CheckpointSave save_checkpoint(World& world, const std::filesystem::path& root, CheckpointManifest header, int step,
                               const std::vector<HostSlice>& slices, const std::function<void()>& stage = {});

// Checks that `found` can restore a state described by `expected` (phase, state values,
// tensors' names, dtypes and sizes). Throws InputError naming the manifest and what differs.
void require_compatible(const FoundCheckpoint& found, const CheckpointManifest& expected);

}  // namespace gpuaccept::train
