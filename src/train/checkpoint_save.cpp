#include "train/checkpoint_save.h"

#include <chrono>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_text.h"

namespace gpuaccept::train {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A rank's report to rank 0: its figures, and its manifest entry when the file was written.
std::string encode(const RankWrite& w, const RankFile* file) {
  json j{{"bytes", w.bytes}, {"stage_s", w.stage_s}, {"write_s", w.write_s}, {"fsync_s", w.fsync_s}, {"error", w.error}};
  if (file) {
    CheckpointManifest one;  // the entry in the manifest's own words
    one.files.push_back(*file);
    j["file"] = json::parse(manifest_json(one))["files"][0];
  }
  return json_text(j);
}

}  // namespace

CheckpointSave save_checkpoint(World& world, const fs::path& root, CheckpointManifest header, int step,
                               const std::vector<HostSlice>& slices, const std::function<void()>& stage) {
  CheckpointSave out;
  out.dir = root / step_dir_name(step);
  // 1. The directory, made by one rank; every rank learns whether it exists.
  std::string made;
  if (world.rank() == 0) {
    std::error_code ec;
    fs::create_directories(out.dir, ec);
    if (!ec) fs::remove(out.dir / kManifestName, ec);
    if (ec) made = fmt::format("{}: {}", out.dir.string(), ec.message());
  }
  made = world.broadcast_string(made, 0);
  const auto started = std::chrono::steady_clock::now();

  // 2. This rank's file.
  out.mine.rank = world.rank();
  out.mine.host = world.hostname();
  RankFile entry;
  bool written = false;
  if (made.empty()) {
    try {
      const auto t = std::chrono::steady_clock::now();
      if (stage) stage();
      out.mine.stage_s = seconds_since(t);
      entry = write_rank_file(out.dir, step, world.rank(), world.size(), world.hostname(), slices, &out.mine.write_s,
                              &out.mine.fsync_s);
      out.mine.bytes = entry.bytes;
      written = true;
    } catch (const std::exception& e) {
      out.mine.error = e.what();
    }
  } else {
    out.mine.error = "no checkpoint directory: " + made;
  }

  // 3. Rank 0: every rank's entry, then the manifest when all are there.
  const std::vector<std::string> reports = world.gather_string(encode(out.mine, written ? &entry : nullptr), 0);
  std::string verdict;
  if (world.rank() == 0) {
    std::vector<std::string> failed;
    header.step = step;
    header.world_size = world.size();
    header.files.clear();
    if (const char* job = std::getenv("SLURM_JOB_ID")) header.job = job;
    for (int r = 0; r < world.size(); ++r) {
      const json j = json::parse(reports[static_cast<std::size_t>(r)]);
      RankWrite w;
      w.rank = r;
      w.host = world.node_names()[static_cast<std::size_t>(world.rank_nodes()[static_cast<std::size_t>(r)])];
      w.bytes = j.at("bytes").get<std::uint64_t>();
      w.stage_s = j.at("stage_s").get<double>();
      w.write_s = j.at("write_s").get<double>();
      w.fsync_s = j.at("fsync_s").get<double>();
      w.error = j.at("error").get<std::string>();
      if (!w.error.empty()) failed.push_back(fmt::format("rank {} ({}): {}", r, w.host, w.error));
      if (j.contains("file")) {
        try {
          const json& f = j.at("file");
          RankFile rf;
          rf.rank = r;
          rf.host = f.at("host").get<std::string>();
          rf.file = f.at("file").get<std::string>();
          rf.bytes = f.at("bytes").get<std::uint64_t>();
          for (const json& s : f.at("slices"))
            rf.slices.push_back({s.at("name").get<std::string>(), s.at("first").get<std::uint64_t>(),
                                 s.at("count").get<std::uint64_t>(),
                                 std::stoull(s.at("xxh3").get<std::string>(), nullptr, 16)});
          header.files.push_back(std::move(rf));
        } catch (const std::exception& e) {
          failed.push_back(fmt::format("rank {}: its report did not read: {}", r, e.what()));
        }
      }
      out.ranks.push_back(w);
    }
    if (failed.empty()) {
      try {
        // Through the reader a restore uses: names, slices inside their tensors, coverage.
        (void)parse_manifest(manifest_json(header), (out.dir / kManifestName).string());
        write_manifest(out.dir, header);
      } catch (const std::exception& e) {
        failed.push_back(fmt::format("manifest: {}", e.what()));
      }
    }
    out.consistent_s = seconds_since(started);
    verdict = json_text(json{{"complete", failed.empty()},
                             {"error", failed.empty() ? std::string() : fmt::format("{}", fmt::join(failed, "; "))},
                             {"consistent_s", out.consistent_s}});
  }
  const json v = json::parse(world.broadcast_string(verdict, 0));
  out.complete = v.at("complete").get<bool>();
  out.error = v.at("error").get<std::string>();
  out.consistent_s = v.at("consistent_s").get<double>();
  return out;
}

void require_compatible(const FoundCheckpoint& found, const CheckpointManifest& expected) {
  const CheckpointManifest& m = found.manifest;
  const std::string where = (found.dir / kManifestName).string();
  if (m.phase != expected.phase)
    throw InputError(fmt::format("{}: a checkpoint of phase '{}', not '{}'", where, m.phase, expected.phase));
  for (const auto& [key, value] : expected.state) {
    const auto it = m.state.find(key);
    if (it == m.state.end() || it->second != value)
      throw InputError(fmt::format("{}: state.{} is '{}', this run has '{}'", where, key,
                                   it == m.state.end() ? "(missing)" : it->second, value));
  }
  for (const StateTensorInfo& t : expected.tensors) {
    const StateTensorInfo* have = m.find_tensor(t.name);
    if (!have) throw InputError(fmt::format("{}: no tensor '{}'", where, t.name));
    if (have->dtype != t.dtype || have->elements != t.elements)
      throw InputError(fmt::format("{}: tensor '{}': {} x {} in the checkpoint, this run has {} x {}", where, t.name,
                                   have->elements, dtype_name(have->dtype), t.elements, dtype_name(t.dtype)));
  }
}

}  // namespace gpuaccept::train
