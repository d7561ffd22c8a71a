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
#include <vector>

#include "results/isolated_read.h"
#include "results/result_file.h"

namespace gpuaccept {

struct MergedParts {
  ResultFile file;         // every part's records and documents; attributes of the first part read
  std::set<int> reported;  // ranks with a readable part
  int world_size = 0;      // from the parts' attributes (0 when no part was readable)
  std::vector<std::string> unreadable;  // why each part that could not be read was not (names the file)
};

// Reads every rank-N.h5 in `parts_dir` with `read`; an unreadable part is logged, listed
// in `unreadable` and skipped. The default reads in this process: ResultWriter calls this
// inside a phase, where fork() is unwelcome (CUDA contexts, NCCL's InfiniBand-registered
// memory); if a damaged part crashes the phase there, the step fails and
// gpuaccept-salvage, which reads each part in a child process, writes the file instead.
MergedParts merge_part_files(const std::filesystem::path& parts_dir, int world_size_hint,
                             const ResultFileReader& read = read_result_file);

// Writes <run_dir>/<phase>.h5 from the parts unless it exists already (then returns
// nullopt: the step wrote it). `why`: how the step ended ("srun exited with code 137").
// world_size: the step's rank count when the parts cannot tell (0: unknown).
// Each part is read with `read`; by default in a child process with read_time_limit()
// (isolated_read.h), so that a damaged checkpoint becomes a line in the ERROR record
// and not a crashed salvage that leaves no phase file at all.
std::optional<std::filesystem::path> salvage_phase_file(const std::filesystem::path& run_dir, const std::string& phase,
                                                        const std::string& why, int world_size,
                                                        const ResultFileReader& read = {});

}  // namespace gpuaccept
