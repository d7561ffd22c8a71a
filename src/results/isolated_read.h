// Reading a results file without trusting libhdf5 with this process. libhdf5 believes
// a file's metadata: on a damaged file (a flipped bit, a zeroed block on a shared
// filesystem) it can crash (SIGSEGV in H5HG_read while converting the records'
// variable-length strings, SIGABRT) or loop for ever in its metadata cache, and read
// in-process one such file took the whole report down (issue 18). Here a forked child
// reads the file with read_result_file and sends all of it back through a pipe
// (result_file_wire.h); a child that crashes, runs past the time limit or fails becomes
// an InputError naming the file and what happened, which the report turns into that
// phase's ERROR. Cost and choices: docs/reliability.md.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>

#include "results/result_file.h"

namespace gpuaccept {

using ResultFileReader = std::function<ResultFile(const std::filesystem::path&)>;

inline constexpr std::chrono::seconds kDefaultReadTimeLimit{30};

// How long one file may take: $GPUACCEPT_READ_TIMEOUT (seconds, > 0, fractions allowed),
// else 30 s. Throws InputError naming the variable when its value is not such a number.
std::chrono::milliseconds read_time_limit();

// read_result_file in a child process. Throws InputError naming the file, e.g.
//   "damaged results file /r/smoke.h5: the reader was killed by SIGSEGV (Segmentation
//    fault) inside libhdf5",
//   "damaged results file /r/smoke.h5: the reader did not finish within 30 s ...",
// or read_result_file's own message ("results file /r/x.h5: not an HDF5 file ...").
ResultFile read_result_file_isolated(const std::filesystem::path& path, std::chrono::milliseconds limit);

// The same with another reader run in the child (the tests' crashing and looping ones).
ResultFile read_result_file_isolated(const std::filesystem::path& path, std::chrono::milliseconds limit,
                                     ResultFile (*reader)(const std::filesystem::path&));

// read_result_file_isolated with `limit`, as a ResultFileReader.
ResultFileReader isolated_reader(std::chrono::milliseconds limit);

}  // namespace gpuaccept
