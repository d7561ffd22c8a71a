// CPU sets as sorted lists of CPU ids, in the "0-3,8" form Slurm, hwloc and
// /proc use: parsing, overlap and containment for the binding checks.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuaccept::smoke {

using CpuSet = std::vector<int>;  // sorted, unique

// "0-3,8" -> {0,1,2,3,8}; "" -> {}; nullopt when malformed ("3-1", "a").
std::optional<CpuSet> parse_cpu_list(std::string_view list);
CpuSet cpu_intersection(const CpuSet& a, const CpuSet& b);
bool cpu_subset(const CpuSet& sub, const CpuSet& super);
// This process's allowed CPUs (sched_getaffinity).
CpuSet current_affinity();

}  // namespace gpuaccept::smoke
