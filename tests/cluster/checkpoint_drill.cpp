// checkpoint-drill: the training checkpoint's CPU side (train/checkpoint_save.h,
// train/checkpoint_files.h) on the real local Slurm cluster, with a small model state in host
// memory instead of a GPU's: what tests/cluster/test_checkpoint.sh runs under srun --mpi=pmix.
//
//   checkpoint-drill save ROOT STEP [--elements N] [--die-rank R]
//       every rank saves its slice of a state whose values are a function of (step, element);
//       rank R kills itself (SIGKILL) in the middle of the save, after the other ranks began.
//       Prints "save step S: complete" or "save step S: NOT complete: <why>" (rank 0).
//   checkpoint-drill restore ROOT [--elements N]
//       every rank restores its slice of the latest valid checkpoint (on this job's world size,
//       which may differ from the one that saved it) and compares it with the values that step
//       must hold. Prints "restore: step S from DIR: every value as saved" (rank 0) and what was
//       passed over; exit 1 and the error (naming the file and tensor) when a file is refused.
//   checkpoint-drill bench DIR BYTES [ROUNDS [WINDOW_MIB]]
//       no Slurm, one process: a rank file of BYTES (write_safetensors: the checkpoint's writer,
//       XXH3 and fsync included), the same with writeback left to its fsync, and the drill's
//       dd-style write of the same bytes (sequential_write), in turn ROUNDS times (default 3)
//       into DIR; one line each, GB/s and where the seconds went, and the median ratios: the
//       checkpoint-vs-dd comparison without a GPU (tests/gpu/checkpoint_bench.sh). WINDOW_MIB:
//       the writer's writeback window (default kWritebackWindow's 64 MiB).
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"
#include "train/checkpoint_files.h"
#include "train/checkpoint_save.h"
#include "train/safetensors_writer.h"
#include "train/sequential_io.h"
#include "world/world.h"

using namespace gpuaccept;
using namespace gpuaccept::train;
namespace fs = std::filesystem;

namespace {

// The state at a step: two tensors whose every value says where it is and which step wrote it.
float master_value(int step, std::uint64_t i) { return static_cast<float>(step) * 1000.0f + static_cast<float>(i % 997); }
float moment_value(int step, std::uint64_t i) { return -static_cast<float>(step) - static_cast<float>(i % 89) * 1e-3f; }

CheckpointManifest header(std::uint64_t elements) {
  CheckpointManifest h;
  h.phase = "drill";
  h.state = {{"model", "drill"}};
  h.tensors = {{"master", Dtype::f32, elements}, {"adam_m", Dtype::f32, elements}};
  return h;
}

int usage() {
  std::fprintf(stderr, "usage: checkpoint-drill save ROOT STEP [--elements N] [--die-rank R]\n"
                       "       checkpoint-drill restore ROOT [--elements N]\n"
                       "       checkpoint-drill bench DIR BYTES [ROUNDS [WINDOW_MIB]]\n");
  return 2;
}

// The bench mode: the checkpoint writer against the dd-style write, alternately, and the writer
// again with writeback left to the kernel until its fsync (what it did before kWritebackWindow).
int bench(const fs::path& dir, std::uint64_t bytes, int rounds, std::uint64_t window) {
  if (bytes < 4 || rounds < 1 || window == 0) return usage();
  fs::create_directories(dir);
  // State-like data (not one repeated block): what a checkpoint writes comes from memory.
  std::vector<float> data(bytes / 4);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = master_value(7, i);
  const auto gbps = [](std::uint64_t b, double s) { return static_cast<double>(b) / s / 1e9; };
  const auto write = [&](std::uint64_t window) {
    const WrittenFile w = write_safetensors(
        dir / "bench.safetensors", {{"state", Dtype::f32, {static_cast<std::int64_t>(data.size())}, data.data()}}, {}, window);
    fs::remove(dir / "bench.safetensors");
    return w;
  };
  std::vector<double> ratios, late_ratios;
  for (int r = 1; r <= rounds; ++r) {
    const WrittenFile w = write(window);
    const WrittenFile late = write(0);
    double dd_fsync_s = 0;
    const double dd_s = sequential_write(dir / "bench.dd", data.size() * 4, &dd_fsync_s);
    fs::remove(dir / "bench.dd");
    const double dd = gbps(data.size() * 4, dd_s);
    ratios.push_back(100.0 * gbps(w.bytes, w.write_s) / dd);
    late_ratios.push_back(100.0 * gbps(late.bytes, late.write_s) / dd);
    // The part before the fsync is CPU work (hashing, copying into the page cache) and, with
    // writeback started behind the writer, the disk's too; the fsync waits for what is left.
    std::printf("round %d: checkpoint writer %.2f GB/s (%.3f s, then %.3f s fsync), writeback left to the fsync "
                "%.2f GB/s (%.3f s, then %.3f s), dd-style %.2f GB/s (%.3f s, then %.3f s)\n",
                r, gbps(w.bytes, w.write_s), w.write_s - w.fsync_s, w.fsync_s, gbps(late.bytes, late.write_s),
                late.write_s - late.fsync_s, late.fsync_s, dd, dd_s - dd_fsync_s, dd_fsync_s);
  }
  std::sort(ratios.begin(), ratios.end());
  std::sort(late_ratios.begin(), late_ratios.end());
  std::printf("median: checkpoint writer (writeback every %llu MiB) at %.0f%% of the dd-style write, %.0f%% with "
              "writeback left to the fsync (%llu bytes, %d rounds)\n",
              static_cast<unsigned long long>(window >> 20), ratios[ratios.size() / 2], late_ratios[late_ratios.size() / 2],
              static_cast<unsigned long long>(bytes), rounds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string mode = argv[1], root = argv[2];
  if (mode == "bench")
    return argc < 4 ? usage()
                    : bench(root, std::strtoull(argv[3], nullptr, 10), argc > 4 ? std::atoi(argv[4]) : 3,
                            argc > 5 ? std::strtoull(argv[5], nullptr, 10) << 20 : kWritebackWindow);
  int step = 0, die_rank = -1;
  std::uint64_t elements = 3'000'001;  // 12 MB per tensor: slices of unequal size on 4 ranks
  int a = 3;
  if (mode == "save") {
    if (argc < 4) return usage();
    step = std::atoi(argv[3]);
    a = 4;
  }
  for (; a + 1 < argc; a += 2) {
    const std::string flag = argv[a];
    if (flag == "--elements") elements = std::strtoull(argv[a + 1], nullptr, 10);
    else if (flag == "--die-rank") die_rank = std::atoi(argv[a + 1]);
    else return usage();
  }
  auto world = make_world();
  const int W = world->size(), rank = world->rank();
  const CheckpointManifest h = header(elements);
  const SliceRange mine = slice_of(elements, W, rank);
  try {
    if (mode == "save") {
      std::vector<float> master(mine.count), moment(mine.count);
      for (std::uint64_t i = 0; i < mine.count; ++i) {
        master[i] = master_value(step, mine.first + i);
        moment[i] = moment_value(step, mine.first + i);
      }
      const auto stage = [&] {
        if (rank == die_rank) {
          // The others are writing by now: this rank dies before its file is complete.
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          std::raise(SIGKILL);
        }
      };
      const CheckpointSave s = save_checkpoint(*world, root, h, step,
                                               {{h.tensors[0], mine, master.data()}, {h.tensors[1], mine, moment.data()}}, stage);
      if (rank == 0) {
        if (s.complete) std::printf("save step %d: complete in %s (%.3f s)\n", step, s.dir.c_str(), s.consistent_s);
        else std::printf("save step %d: NOT complete: %s\n", step, s.error.c_str());
      }
      return s.complete ? 0 : 1;
    }
    if (mode == "restore") {
      const FoundCheckpoint f = latest_checkpoint(root, "drill");
      if (rank == 0)
        for (const std::string& p : f.passed_over) std::printf("passed over: %s\n", p.c_str());
      if (!f.found()) throw InputError("no valid checkpoint under " + root);
      require_compatible(f, h);
      std::vector<float> master(mine.count), moment(mine.count);
      read_state_range(f, "master", mine, master.data());
      read_state_range(f, "adam_m", mine, moment.data());
      std::uint64_t wrong = 0;
      for (std::uint64_t i = 0; i < mine.count; ++i)
        wrong += master[i] != master_value(f.manifest.step, mine.first + i) ||
                 moment[i] != moment_value(f.manifest.step, mine.first + i);
      const bool all_right = !world->any(wrong != 0);
      if (rank == 0)
        std::printf("restore: step %d from %s (saved by %d ranks, restored by %d): %s\n", f.manifest.step,
                    f.dir.c_str(), f.manifest.world_size, W, all_right ? "every value as saved" : "VALUES DIFFER");
      return all_right ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "checkpoint-drill rank %d: %s\n", rank, e.what());
    return 1;
  }
  return usage();
}
