// A training checkpoint's rank files: each rank writes its slice of every state tensor into
// one safetensors file (train/safetensors_writer.h) and reads back whatever slice it needs,
// from whichever files hold it, verified against the manifest (train/checkpoint_manifest.h).
// Host memory only (CPU): the GPU side (train/training_checkpoint.h) stages through it.
//
// Slicing: a state tensor of T elements over W ranks gives rank r the elements
// [r * ceil(T/W), min(T, (r+1) * ceil(T/W))), so write bandwidth scales with the ranks and
// a restore on another world size finds its elements by arithmetic.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "train/checkpoint_manifest.h"

namespace gpuaccept::train {

struct SliceRange {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
};

SliceRange slice_of(std::uint64_t total, int world_size, int rank);

// This rank's slice of one state tensor, in host memory.
struct HostSlice {
  StateTensorInfo tensor;  // the whole tensor's name, dtype and element count
  SliceRange range;
  const void* data = nullptr;  // range.count elements
};

// "rank-00003.safetensors"
std::string rank_file_name(int rank);

// Writes this rank's file into `dir` (which must exist) and returns its manifest entry, the
// checksums taken while writing. Throws CallError naming the file (a full filesystem: "No
// space left on device"); no partial file is left. *write_s: open to fsync done; *fsync_s: the
// fsync's part of it.
RankFile write_rank_file(const std::filesystem::path& dir, int step, int rank, int world_size, const std::string& host,
                         const std::vector<HostSlice>& slices, double* write_s = nullptr, double* fsync_s = nullptr);

// Elements `want` of state tensor `name` into dst, from the checkpoint's files. Every file
// slice it touches is read whole and verified: the file's size against the manifest's (a
// truncated file), its safetensors header, the tensor's presence, dtype and element count in
// it, and the XXH3 of its bytes. Throws InputError naming the file and the tensor. Returns the
// bytes read from files.
std::uint64_t read_state_range(const FoundCheckpoint& ckpt, const std::string& name, SliceRange want, void* dst);

}  // namespace gpuaccept::train
