// When a job step ends without its phase file: Slurm's srun takes every rank down when
// one is killed by a signal (SIGKILL from the OOM killer, a node that dies), so no rank
// is left to gather. The ranks' checkpoints (<run>/<phase>.parts/rank-N.h5, written by
// ResultWriter::checkpoint) still hold what was measured; salvage_phase_file() turns them
// into <run>/<phase>.h5 with an ERROR record saying how the step ended and which ranks never
// checkpointed. The sbatch scripts call it (gpuaccept-salvage) after a failed step.
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include "results/result_file.h"

namespace gpuaccept {

struct MergedParts {
  ResultFile file;         // every part's records and documents; attributes of the first part read
  std::set<int> reported;  // ranks with a readable part
  int world_size = 0;      // from the parts' attributes (0 when no part was readable)
};

// Reads every rank-N.h5 in `parts_dir`; an unreadable part is logged and skipped.
MergedParts merge_part_files(const std::filesystem::path& parts_dir, int world_size_hint);

// Writes <run_dir>/<phase>.h5 from the parts unless it exists already (then returns
// nullopt: the step wrote it). `why`: how the step ended ("srun exited with code 137").
// world_size: the step's rank count when the parts cannot tell (0: unknown).
std::optional<std::filesystem::path> salvage_phase_file(const std::filesystem::path& run_dir, const std::string& phase,
                                                        const std::string& why, int world_size);

}  // namespace gpuaccept
