#include "run/loaded_run.h"

#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "common/error.h"
#include "results/heartbeat.h"
#include "results/isolated_read.h"
#include "results/result_file.h"

namespace gpuaccept::report {
namespace fs = std::filesystem;

std::string_view to_string(SourceState s) {
  switch (s) {
    case SourceState::Complete: return "complete";
    case SourceState::Partial: return "partial";
    case SourceState::Unreadable: return "unreadable";
    case SourceState::Missing: return "missing";
  }
  return "missing";
}

std::vector<std::string> LoadedRun::documents(const std::string& phase, const std::string& name) const {
  std::vector<std::string> out;
  for (const auto& s : sources) {
    if (s.phase != phase) continue;
    const auto it = s.documents.find(name);
    if (it != s.documents.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return out;
}

namespace {

// "smoke-2.h5" -> "smoke" (a second run of the phase in one job); "fsdp-lora.h5" stays.
std::string phase_from_name(const fs::path& p) {
  std::string stem = p.stem().string();
  const auto dash = stem.rfind('-');
  if (dash != std::string::npos && dash + 1 < stem.size() &&
      std::all_of(stem.begin() + static_cast<long>(dash) + 1, stem.end(), [](char c) { return c >= '0' && c <= '9'; }))
    stem.resize(dash);
  return stem;
}

// About a file, not a node: it names none (results/record.h).
Record source_error(const std::string& phase, const std::string& message) {
  Record r = job_record(kResultFileTest);
  r.phase = phase;
  r.status = Status::Error;
  r.message = message;
  return r;
}

PhaseSource make_source(std::string phase, fs::path path, SourceState state, std::string problem) {
  PhaseSource s;
  s.phase = std::move(phase);
  s.path = std::move(path);
  s.state = state;
  s.problem = std::move(problem);
  return s;
}

// Reads one results file into `run`; a file that cannot be read becomes an ERROR record.
PhaseSource read_source(const fs::path& path, const std::string& phase_guess, const ResultFileReader& read,
                        LoadedRun& run) {
  PhaseSource src = make_source(phase_guess, path, SourceState::Complete, "");
  try {
    ResultFile f = read(path);
    if (const auto it = f.attributes.find("phase"); it != f.attributes.end() && !it->second.empty())
      src.phase = it->second;
    if (f.attributes["complete"] == "partial") {
      src.state = SourceState::Partial;
      src.problem = "written from rank checkpoints: some ranks did not report (see result_gather)";
    }
    src.attributes = std::move(f.attributes);
    for (auto& [name, per_rank] : f.documents)
      for (auto& d : per_rank)
        if (!d.empty()) src.documents[name].push_back(std::move(d));
    src.records = f.records.size();
    run.records.insert(run.records.end(), std::make_move_iterator(f.records.begin()),
                       std::make_move_iterator(f.records.end()));
  } catch (const std::exception& e) {
    // InputError names the file; anything else (a malformed params field, ...) gets it here.
    const std::string what = e.what();
    src.state = SourceState::Unreadable;
    src.problem = what.find(path.string()) == std::string::npos ? fmt::format("{}: {}", path.string(), what) : what;
    run.records.push_back(source_error(src.phase, src.problem));
  }
  return src;
}

// <phase>.parts/ without <phase>.h5: rank 0 died before writing the phase's file, so
// the ranks' checkpoints are all there is. Each part is read as a source of its own.
void read_parts(const fs::path& parts_dir, const ResultFileReader& read, LoadedRun& run) {
  const std::string phase = parts_dir.stem().string();
  std::vector<fs::path> parts;
  for (const auto& e : fs::directory_iterator(parts_dir))
    if (e.is_regular_file() && e.path().extension() == ".h5") parts.push_back(e.path());
  std::sort(parts.begin(), parts.end());
  // The ranks' heartbeats (results/heartbeat.h) tell a phase still at work (a report started
  // early, e.g. by hand) from one whose ranks are gone: they are touched every period until the
  // phase file is written. Fresh means within three periods (GPUACCEPT_HEARTBEAT here, as the
  // phases had it), and at least 30 s.
  const double still_running_s = std::max(30.0, 3 * heartbeat_period_s());
  const double age = newest_heartbeat_age_s(parts_dir);
  const std::string state =
      age >= 0 && age <= still_running_s
          ? fmt::format("the phase is still running (a rank's heartbeat {:.0f} s ago): this report came before "
                        "the phase ended; run it again once the phase's job has ended",
                        age)
          : "rank 0 died or hung before writing it";
  run.records.push_back(source_error(
      phase, fmt::format("{}.h5 is missing: {}; showing the checkpoints of {} rank(s) from {}", phase, state,
                         parts.size(), parts_dir.string())));
  for (const auto& p : parts) {
    PhaseSource src = read_source(p, phase, read, run);
    if (src.state != SourceState::Unreadable) {
      src.state = SourceState::Partial;
      src.problem = fmt::format("a rank's checkpoint; {}.h5 was never written", phase);
    }
    run.sources.push_back(std::move(src));
  }
}

// <phase>.not-run: the pipeline chose not to start the phase (sbatch/pipeline.sbatch: its
// PIPELINE_TIME was spent) and wrote why. The phase is a SKIP with that reason, not an ERROR.
void read_not_run(const fs::path& file, LoadedRun& run) {
  const std::string phase = file.stem().string();
  std::ifstream in(file);
  std::string why;
  std::getline(in, why);
  if (why.size() > 1000) why.resize(1000);
  if (why.empty()) why = "the pipeline did not start it (" + file.string() + " gives no reason)";
  run.sources.push_back(make_source(phase, file, SourceState::Missing, "not run: " + why));
  Record r = source_error(phase, "not run: " + why);
  r.test = "phase";
  r.status = Status::Skip;
  run.records.push_back(std::move(r));
}

}  // namespace

LoadedRun load_run(const fs::path& dir, const std::vector<std::string>& expected_phases) {
  return load_run(dir, expected_phases, isolated_reader(read_time_limit()));
}

LoadedRun load_run(const fs::path& dir, const std::vector<std::string>& expected_phases, const ResultFileReader& read) {
  if (!fs::is_directory(dir)) throw InputError(fmt::format("run directory {}: does not exist or is not a directory", dir.string()));
  LoadedRun run;
  run.dir = dir;
  std::vector<fs::path> files, parts_dirs, not_run;
  for (const auto& e : fs::directory_iterator(dir)) {
    const fs::path& p = e.path();
    if (p.filename().string().starts_with(".")) continue;  // temporaries of a writer still at work
    if (e.is_regular_file() && p.extension() == ".h5") files.push_back(p);
    if (e.is_directory() && p.extension() == ".parts") parts_dirs.push_back(p);
    if (e.is_regular_file() && p.extension() == ".not-run") not_run.push_back(p);
  }
  std::sort(files.begin(), files.end());
  std::sort(parts_dirs.begin(), parts_dirs.end());

  std::set<std::string> seen;
  for (const auto& f : not_run) {
    const std::string phase = f.stem().string();
    if (fs::exists(dir / (phase + ".h5")) || fs::exists(dir / (phase + ".parts"))) continue;  // it ran after all
    read_not_run(f, run);
    seen.insert(phase);
  }
  for (const auto& f : files) {
    run.sources.push_back(read_source(f, phase_from_name(f), read, run));
    seen.insert(run.sources.back().phase);
  }
  for (const auto& d : parts_dirs) {
    if (fs::exists(dir / (d.stem().string() + ".h5"))) continue;  // the phase's file won; parts are leftovers
    read_parts(d, read, run);
    seen.insert(d.stem().string());
  }
  for (const auto& phase : expected_phases) {
    if (seen.count(phase)) continue;
    const fs::path expected = dir / (phase + ".h5");
    const std::string why = fmt::format("expected phase {} did not report: no {} and no {}.parts/", phase,
                                        expected.string(), phase);
    run.sources.push_back(make_source(phase, expected, SourceState::Missing, why));
    run.records.push_back(source_error(phase, why));
  }
  if (run.sources.empty()) {
    const std::string why = fmt::format("no results files (*.h5) in {}", dir.string());
    run.sources.push_back(make_source("run", dir, SourceState::Missing, why));
    run.records.push_back(source_error("run", why));
  }
  return run;
}

}  // namespace gpuaccept::report
