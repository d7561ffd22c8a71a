#include "train/checkpoint_files.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "common/error.h"
#include "train/safetensors_writer.h"

namespace gpuaccept::train {

namespace fs = std::filesystem;

SliceRange slice_of(std::uint64_t total, int world_size, int rank) {
  const auto W = static_cast<std::uint64_t>(world_size);
  const std::uint64_t per = (total + W - 1) / W;
  const std::uint64_t first = std::min(total, per * static_cast<std::uint64_t>(rank));
  return {first, std::min(total, first + per) - first};
}

std::string rank_file_name(int rank) { return fmt::format("rank-{:05d}.safetensors", rank); }

RankFile write_rank_file(const fs::path& dir, int step, int rank, int world_size, const std::string& host,
                         const std::vector<HostSlice>& slices, double* write_s, double* fsync_s) {
  std::vector<TensorToWrite> tensors;
  for (const HostSlice& s : slices)
    tensors.push_back({s.tensor.name, s.tensor.dtype, {static_cast<std::int64_t>(s.range.count)}, s.data});
  const std::map<std::string, std::string> metadata{
      {"format", "gpuaccept-checkpoint"}, {"step", std::to_string(step)}, {"rank", std::to_string(rank)},
      {"world_size", std::to_string(world_size)}};
  RankFile out;
  out.rank = rank;
  out.host = host;
  out.file = rank_file_name(rank);
  const WrittenFile written = write_safetensors(dir / out.file, tensors, metadata);
  out.bytes = written.bytes;
  for (std::size_t i = 0; i < slices.size(); ++i)
    out.slices.push_back({slices[i].tensor.name, slices[i].range.first, slices[i].range.count, written.tensors[i].xxh3});
  if (write_s) *write_s = written.write_s;
  if (fsync_s) *fsync_s = written.fsync_s;
  return out;
}

namespace {

// One file's slice of `name`, read whole into dst and verified.
void read_file_slice(const FoundCheckpoint& ckpt, const RankFile& rf, const FileSlice& slice, Dtype dtype, void* dst) {
  const fs::path path = ckpt.dir / rf.file;
  const auto fail = [&](const std::string& what) {
    throw InputError(fmt::format("{}: tensor '{}': {}", path.string(), slice.name, what));
  };
  std::error_code ec;
  const std::uint64_t size = fs::file_size(path, ec);
  if (ec) throw InputError(fmt::format("{}: {} (the manifest lists it for rank {})", path.string(), ec.message(), rf.rank));
  if (size != rf.bytes)
    throw InputError(fmt::format("{}: {} bytes, the manifest says {}{}", path.string(), size, rf.bytes,
                                 size < rf.bytes ? " (truncated)" : ""));
  const SafetensorsFile file(path);  // its header validated
  const auto meta = file.metadata();
  const auto has = [&](const char* k, const std::string& v) { auto it = meta.find(k); return it != meta.end() && it->second == v; };
  if (!has("format", "gpuaccept-checkpoint") || !has("step", std::to_string(ckpt.manifest.step)) ||
      !has("rank", std::to_string(rf.rank)))
    throw InputError(fmt::format("{}: not rank {}'s file of step {} (its metadata: format '{}', step '{}', rank '{}')",
                                 path.string(), rf.rank, ckpt.manifest.step, meta.count("format") ? meta.at("format") : "",
                                 meta.count("step") ? meta.at("step") : "", meta.count("rank") ? meta.at("rank") : ""));
  const TensorInfo* t = file.find(slice.name);
  if (!t) fail("missing");
  if (t->dtype != dtype) fail(fmt::format("dtype {}, the manifest says {}", dtype_name(t->dtype), dtype_name(dtype)));
  if (t->numel() != slice.count) fail(fmt::format("{} elements, the manifest says {}", t->numel(), slice.count));
  // The pages this read needs come from the filesystem, not from a cache of the write.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
  file.read_elements(slice.name, 0, slice.count, dst);
  const std::uint64_t got = xxh3_of(dst, slice.count * dtype_size(dtype));
  if (got != slice.xxh3)
    fail(fmt::format("checksum XXH3 {:016x}, the manifest says {:016x}: the data is damaged", got, slice.xxh3));
}

}  // namespace

std::uint64_t read_state_range(const FoundCheckpoint& ckpt, const std::string& name, SliceRange want, void* dst) {
  const StateTensorInfo* info = ckpt.manifest.find_tensor(name);
  const fs::path manifest = ckpt.dir / kManifestName;
  if (!info) throw InputError(fmt::format("{}: no tensor '{}' in this checkpoint", manifest.string(), name));
  if (want.first > info->elements || want.count > info->elements - want.first)
    throw InputError(fmt::format("{}: tensor '{}' has {} elements, [{}, +{}) asked for", manifest.string(), name,
                                 info->elements, want.first, want.count));
  const std::size_t esize = dtype_size(info->dtype);
  std::uint64_t read = 0;
  std::unique_ptr<char[]> scratch;
  for (const RankFile& rf : ckpt.manifest.files) {
    for (const FileSlice& s : rf.slices) {
      if (s.name != name || s.count == 0) continue;
      const std::uint64_t lo = std::max(s.first, want.first), hi = std::min(s.first + s.count, want.first + want.count);
      if (lo >= hi) continue;
      char* out = static_cast<char*>(dst) + (lo - want.first) * esize;
      if (lo == s.first && hi == s.first + s.count) {
        read_file_slice(ckpt, rf, s, info->dtype, out);  // the whole slice lands in place
      } else {
        // Another world size: the file's slice read whole (its checksum covers all of it).
        scratch = std::make_unique<char[]>(s.count * esize);
        read_file_slice(ckpt, rf, s, info->dtype, scratch.get());
        std::memcpy(out, scratch.get() + (lo - s.first) * esize, (hi - lo) * esize);
      }
      read += s.count * esize;
    }
  }
  return read;
}

}  // namespace gpuaccept::train
