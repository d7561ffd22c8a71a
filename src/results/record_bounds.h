// The ranges a record's numbers must fall in (docs/results-format.md). libhdf5 reads a
// damaged file's numbers as readily as good ones; a gpu_index of 1073741826 from one
// flipped bit would make the report draw a grid with a billion GPU columns. A record
// outside these bounds marks its file as damaged.
#pragma once

#include <filesystem>
#include <vector>

#include "results/record.h"

namespace gpuaccept {

// More GPUs than one node has (16 is the most in a server today) and more ranks than
// one job has: bounds for what a damaged number may make a reader allocate or draw.
inline constexpr int kMaxGpuIndex = 255;
inline constexpr int kMaxRank = (1 << 20) - 1;

// Throws InputError naming the file, the record and the field when a record's rank is
// not -1..kMaxRank or its gpu_index not -1..kMaxGpuIndex.
void check_record_bounds(const std::filesystem::path& file, const std::vector<Record>& records);

}  // namespace gpuaccept
