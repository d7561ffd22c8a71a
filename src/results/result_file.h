// A results file: what one phase of one job measured, as stored in
// <results>/<run>/<phase>.h5 (docs/results-format.md has the layout).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "results/record.h"

namespace gpuaccept {

inline constexpr int kResultsFormatVersion = 1;

struct ResultFile {
  // File attributes: tool_version, git_commit, phase, start_time, end_time,
  // slurm_job_id, slurm_array_job_id, slurm_array_task_id, slurm_nodelist,
  // world_size, hosts, config_path, config, complete, ...
  std::map<std::string, std::string> attributes;
  std::vector<Record> records;
  // Per-rank JSON documents by name (e.g. "inventory"): documents[name][rank].
  std::map<std::string, std::vector<std::string>> documents;
};

// Writes to a temporary name in the same directory and links it into place, so a
// reader never sees half a file and an existing file is never overwritten: if
// `path` exists, "<stem>-2.h5", "<stem>-3.h5", ... is used. Returns the final path.
std::filesystem::path write_result_file(const std::filesystem::path& path, const ResultFile& file);

// Reads a results file. Throws InputError naming the file when it is missing,
// truncated or not HDF5, or an HDF5 file that gpuaccept did not write.
ResultFile read_result_file(const std::filesystem::path& path);

}  // namespace gpuaccept
