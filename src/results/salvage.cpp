#include "results/salvage.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.h"
#include "common/log.h"
#include "results/heartbeat.h"
#include "results/record_bounds.h"
#include "results/result_writer.h"

namespace gpuaccept {

namespace fs = std::filesystem;

namespace {

// A rank or world size from a part's attributes, checked: a flipped bit there would
// otherwise size the merged documents (one slot per rank) by an absurd number.
int count_attribute(const ResultFile& part, const char* name, int max, const fs::path& path) {
  const std::string& text = part.attributes.at(name);
  std::size_t used = 0;
  int v = -1;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
  }
  if (used != text.size() || v < 0 || v > max)
    throw InputError(
        fmt::format("checkpoint {}: attribute '{}' is '{}', not a number 0..{}", path.string(), name, text, max));
  return v;
}

}  // namespace

MergedParts merge_part_files(const fs::path& parts_dir, int world_size_hint, const ResultFileReader& read) {
  MergedParts m;
  m.world_size = world_size_hint;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(parts_dir, ec)) {
    if (entry.path().extension() != ".h5" || entry.path().filename().string().find(".next") != std::string::npos)
      continue;
    try {
      ResultFile part = read(entry.path());
      if (!part.attributes.count("rank"))
        throw InputError(fmt::format("checkpoint {}: no 'rank' attribute", entry.path().string()));
      const int rank = count_attribute(part, "rank", kMaxRank, entry.path());
      if (part.attributes.count("world_size"))
        m.world_size = std::max(m.world_size, count_attribute(part, "world_size", kMaxRank + 1, entry.path()));
      if (m.reported.empty()) m.file.attributes = part.attributes;
      m.reported.insert(rank);
      for (auto& r : part.records) m.file.records.push_back(std::move(r));
      for (auto& [name, texts] : part.documents) {
        auto& slot = m.file.documents[name];
        if (static_cast<int>(slot.size()) <= rank) slot.resize(static_cast<std::size_t>(rank) + 1);
        if (!texts.empty()) slot[static_cast<std::size_t>(rank)] = texts.front();
      }
    } catch (const std::exception& e) {
      log_error("{}", e.what());
      m.unreadable.push_back(e.what());
    }
  }
  m.file.attributes.erase("rank");
  m.file.attributes["complete"] = "partial";
  for (auto& [name, slot] : m.file.documents) slot.resize(static_cast<std::size_t>(std::max(m.world_size, 1)));
  return m;
}

std::optional<fs::path> salvage_phase_file(const fs::path& run_dir, const std::string& phase, const std::string& why,
                                           int world_size, const ResultFileReader& read) {
  const fs::path target = run_dir / (phase + ".h5");
  if (fs::exists(target)) return std::nullopt;
  MergedParts m =
      merge_part_files(run_dir / (phase + ".parts"), world_size, read ? read : isolated_reader(read_time_limit()));
  m.file.attributes["phase"] = phase;
  m.file.attributes["end_time"] = utc_now();
  if (m.world_size > 0) m.file.attributes["world_size"] = std::to_string(m.world_size);
  std::vector<int> missing;
  for (int r = 0; r < m.world_size; ++r)
    if (!m.reported.count(r)) missing.push_back(r);
  Record err;
  err.phase = phase;
  err.rank = kJobLevel;
  err.test = "result_gather";
  err.status = Status::Error;
  err.message = fmt::format(
      "the job step ended without writing its results ({}); this file was assembled from the checkpoints of {} of {} "
      "ranks{}{}",
      why, m.reported.size(), m.world_size > 0 ? std::to_string(m.world_size) : "?",
      missing.empty() ? std::string() : fmt::format("; ranks {} left no checkpoint", fmt::join(missing, ",")),
      m.unreadable.empty() ? std::string()
                           : fmt::format("; {} checkpoint(s) could not be read: {}", m.unreadable.size(),
                                         fmt::join(m.unreadable, "; ")));
  const auto silent = silent_ranks(run_dir / (phase + ".parts"), m.file.records);
  for (const auto& s : silent) err.message += "; " + describe(s);
  m.file.records.push_back(std::move(err));
  for (const auto& s : silent) m.file.records.push_back(silent_rank_record(s, phase));
  fs::create_directories(run_dir);  // a step that died before any rank made it
  return write_result_file(target, m.file);
}

}  // namespace gpuaccept
