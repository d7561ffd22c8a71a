// A run directory as the report sees it: every results file that is there, what was
// wrong with the ones that could not be read, and one list of all records. Reading is
// lenient on purpose: a truncated file, a foreign HDF5 file, a phase whose rank 0
// died (only <phase>.parts/ left) or an expected phase that never ran each become an
// ERROR record naming the file and the reason, so the report shows them instead of
// stopping at the first one. A phase the pipeline chose not to start (<phase>.not-run, written
// by sbatch/pipeline.sbatch when PIPELINE_TIME is spent) is a SKIP record with the reason the
// file gives. Each file is read in a child process (results/
// isolated_read.h): a file that crashes libhdf5 or makes it loop becomes such an ERROR
// too, and this process, the report, never runs libhdf5 on a file at all.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "results/isolated_read.h"
#include "results/record.h"

namespace gpuaccept::report {

enum class SourceState { Complete, Partial, Unreadable, Missing };

std::string_view to_string(SourceState s);  // "complete", "partial", "unreadable", "missing"

// One results file of a phase, or the parts directory standing in for it.
struct PhaseSource {
  std::string phase;
  std::filesystem::path path;  // for Missing: the file that was expected
  SourceState state = SourceState::Complete;
  std::string problem;  // why it is Partial, Unreadable or Missing
  std::map<std::string, std::string> attributes;
  std::map<std::string, std::vector<std::string>> documents;  // by name, non-empty entries only
  std::size_t records = 0;
};

struct LoadedRun {
  std::filesystem::path dir;
  std::vector<PhaseSource> sources;
  std::vector<Record> records;  // from every source, plus the ERROR records about sources

  // Every non-empty document called `name` that `phase` wrote (e.g. discover's inventory).
  std::vector<std::string> documents(const std::string& phase, const std::string& name) const;
};

// The test name of the ERROR records about unreadable, partial or missing files.
inline constexpr const char* kResultFileTest = "result_file";

// Throws InputError when `dir` is not a directory (or GPUACCEPT_READ_TIMEOUT is not a
// number); everything inside is read leniently, each file in a child process with
// read_time_limit().
LoadedRun load_run(const std::filesystem::path& dir, const std::vector<std::string>& expected_phases);

// The same with another reader for each file (the tests' crashing and looping ones).
LoadedRun load_run(const std::filesystem::path& dir, const std::vector<std::string>& expected_phases,
                   const ResultFileReader& read);

}  // namespace gpuaccept::report
