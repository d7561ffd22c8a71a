// The manifest of a training checkpoint: what makes a directory of rank files a checkpoint.
//
//   <root>/step-00000012/rank-00000.safetensors   each rank's slice of the state
//                        rank-00001.safetensors   (train/checkpoint_files.h)
//                        ...
//                        manifest.json            written last, by rank 0, atomically
//
// Rank 0 writes the manifest only after every rank has reported its file written and fsynced,
// through a temporary file, fsync, rename and an fsync of the directory. A directory without a
// manifest is a save that did not finish (a rank died, the filesystem filled): it is passed
// over, and the previous checkpoint stays the latest valid one. CPU only.
//
// manifest.json:
//   {"format": "gpuaccept-checkpoint", "version": 1, "phase": "ddp", "step": 12,
//    "world_size": 4, "created": "2026-11-25T18:00:00Z", "job": "1234",
//    "state": {"model": "gpt2_124m", ...},          what a resume must match
//    "tensors": [{"name": "master", "dtype": "F32", "elements": 124475904}, ...],
//    "files": [{"rank": 0, "host": "gpu-node1", "file": "rank-00000.safetensors",
//               "bytes": 1493852160,
//               "slices": [{"name": "master", "first": 0, "count": 31118976,
//                           "xxh3": "0123456789abcdef"}, ...]}, ...]}
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "train/safetensors_reader.h"

namespace gpuaccept::train {

inline constexpr const char* kManifestName = "manifest.json";
inline constexpr int kCheckpointFormatVersion = 1;

// One tensor of the whole state (all ranks' slices together): a flat array.
struct StateTensorInfo {
  std::string name;
  Dtype dtype = Dtype::f32;
  std::uint64_t elements = 0;
};

// Elements [first, first + count) of one state tensor, as one rank's file holds them.
struct FileSlice {
  std::string name;
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  std::uint64_t xxh3 = 0;  // of the slice's bytes (safetensors_writer.h)
};

struct RankFile {
  int rank = 0;
  std::string host;
  std::string file;  // name inside the step directory
  std::uint64_t bytes = 0;
  std::vector<FileSlice> slices;
};

struct CheckpointManifest {
  std::string phase;
  int step = 0;
  int world_size = 0;
  std::string created;  // UTC, ISO 8601
  std::string job;      // SLURM_JOB_ID, "" outside Slurm
  std::map<std::string, std::string> state;  // what a resume must match (model, seed, ...)
  std::vector<StateTensorInfo> tensors;
  std::vector<RankFile> files;  // by rank

  const StateTensorInfo* find_tensor(const std::string& name) const;
};

std::string manifest_json(const CheckpointManifest& m);
// Throws InputError naming `source` and the key when the text is not a manifest of this
// format: JSON, format and version, every key's type, file names that stay inside the
// directory, slices inside their tensors and together covering each tensor exactly once.
CheckpointManifest parse_manifest(const std::string& text, const std::string& source);

// "step-00000012"
std::string step_dir_name(int step);
// Writes <dir>/manifest.json atomically (temporary file, fsync, rename, fsync of dir).
// Throws CallError naming the file on any failure; no manifest is left then.
void write_manifest(const std::filesystem::path& dir, const CheckpointManifest& m);
// Reads and parses <dir>/manifest.json (InputError naming it when missing or malformed).
CheckpointManifest read_manifest(const std::filesystem::path& dir);

struct FoundCheckpoint {
  std::filesystem::path dir;  // empty: none found
  bool found() const { return !dir.empty(); }
  CheckpointManifest manifest;
  // Newer step directories passed over, each with why ("no manifest: a save that did not
  // finish", or the manifest's error).
  std::vector<std::string> passed_over;
};

// The newest step directory under root whose manifest reads (found() false: none, or no
// root; passed_over says what was there); `phase` non-empty: only that phase's checkpoints.
FoundCheckpoint latest_checkpoint(const std::filesystem::path& root, const std::string& phase = {});

}  // namespace gpuaccept::train
