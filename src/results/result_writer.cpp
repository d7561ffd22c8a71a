#include "results/result_writer.h"
#include "results/salvage.h"

#include <algorithm>
#include <ctime>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/log.h"
#include "slurm/slurm_env.h"
#include "common/json_text.h"

namespace gpuaccept {
namespace fs = std::filesystem;
using nlohmann::json;

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

ResultWriter::ResultWriter(World& world, std::string phase, fs::path run_dir,
                           std::map<std::string, std::string> attributes)
    : world_(world), phase_(std::move(phase)), run_dir_(std::move(run_dir)), attributes_(std::move(attributes)) {
  attributes_["phase"] = phase_;
  attributes_.try_emplace("start_time", utc_now());
  attributes_["world_size"] = std::to_string(world_.size());
  heartbeat_ = std::make_unique<Heartbeat>(parts_dir() / fmt::format("rank-{:05d}.alive", world_.rank()),
                                           heartbeat_period_s());
}

Record& ResultWriter::add(Record r) {
  static const SlurmEnv slurm = SlurmEnv::from_process();
  if (r.phase.empty()) r.phase = phase_;
  if (r.job_id.empty()) r.job_id = slurm.job_id;
  if (r.array_job_id.empty()) r.array_job_id = slurm.array_job_id;
  if (r.array_task_id.empty()) r.array_task_id = slurm.array_task_id;
  if (r.rank == kRankUnset) r.rank = world_.rank();
  if (r.node.empty() && r.rank != kJobLevel) r.node = world_.hostname();  // job-level: "" = all nodes
  records_.push_back(std::move(r));
  return records_.back();
}

namespace {

// A check or a measurement on `base` (a rank's record to be stamped by add(), or a job's).
Record checked(Record base, Status status, const std::string& message, Params params) {
  base.status = status;
  base.message = message;
  base.params = std::move(params);
  return base;
}

Record measured(Record base, const std::string& metric, double value, const std::string& unit, Params params) {
  base.metric = metric;
  base.value = value;
  base.unit = unit;
  base.params = std::move(params);
  return base;
}

Record rank_record(const std::string& test) {
  Record r;
  r.test = test;
  return r;
}

}  // namespace

Record& ResultWriter::check(const std::string& test, Status status, const std::string& message, Params params) {
  return add(checked(rank_record(test), status, message, std::move(params)));
}

Record& ResultWriter::measure(const std::string& test, const std::string& metric, double value,
                              const std::string& unit, Params params) {
  return add(measured(rank_record(test), metric, value, unit, std::move(params)));
}

Record& ResultWriter::job_check(const std::string& test, Status status, const std::string& message, Params params) {
  return add(checked(job_record(test), status, message, std::move(params)));
}

Record& ResultWriter::job_measure(const std::string& test, const std::string& metric, double value,
                                  const std::string& unit, Params params) {
  return add(measured(job_record(test), metric, value, unit, std::move(params)));
}

void ResultWriter::set_document(const std::string& name, std::string json_text) {
  documents_[name] = std::move(json_text);
}

fs::path ResultWriter::parts_dir() const { return run_dir_ / (phase_ + ".parts"); }

ResultFile ResultWriter::local_file() const {
  ResultFile f;
  f.attributes = attributes_;
  f.attributes["complete"] = "partial";
  f.attributes["rank"] = std::to_string(world_.rank());
  f.records = records_;
  for (const auto& [name, text] : documents_) f.documents[name] = {text};
  return f;
}

void ResultWriter::checkpoint() {
  std::error_code ec;
  fs::create_directories(parts_dir(), ec);
  const fs::path final_path = parts_dir() / fmt::format("rank-{:05d}.h5", world_.rank());
  const fs::path staged = write_result_file(parts_dir() / fmt::format("rank-{:05d}.next.h5", world_.rank()), local_file());
  fs::rename(staged, final_path);  // replacing the previous checkpoint is intended here
}

Status ResultWriter::write_final(ResultFile file) {
  file.attributes["end_time"] = utc_now();
  written_ = write_result_file(run_dir_ / (phase_ + ".h5"), file);
  heartbeat_->stop();  // this rank ended; the parts go next
  std::error_code ec;
  fs::remove_all(parts_dir(), ec);  // the phase file now holds everything the parts held
  Status worst = Status::Pass;
  bool measured = false;
  for (const auto& r : file.records) {
    worst = most_severe(worst, r.status);
    measured = measured || r.status == Status::Pass;
  }
  log_rank0("results: {} ({} records, {} ranks)", written_.string(), file.records.size(), world_.size());
  // A phase is SKIP when it measured nothing, as the report says; some checks SKIPping beside
  // PASSes (a scale one GPU cannot show) leave it PASS.
  return worst == Status::Skip && measured ? Status::Pass : worst;
}

Status ResultWriter::finish() {
  Status mine = Status::Pass;
  for (const auto& r : records_) mine = most_severe(mine, r.status);
  // Each rank sends {records, documents}; documents are indexed by rank on arrival.
  json payload = {{"records", json::parse(encode_records(records_))}, {"documents", documents_}};
  std::vector<std::string> all;
  try {
    all = world_.gather_string(json_text(payload), 0);  // rank 0 writes the file
  } catch (const std::exception& e) {
    log_error("gathering results failed: {}", e.what());
    if (world_.rank() != 0) {
      // Rank 0 writes the file from the checkpoints: this rank's last records go there, and its
      // heartbeat says it ended rather than hung.
      try {
        checkpoint();
      } catch (const std::exception& c) {
        log_error("results checkpoint failed: {}", c.what());
      }
      heartbeat_->stop();
      return most_severe(mine, Status::Error);
    }
    return write_from_parts(e.what());
  }
  Status worst = Status::Pass;
  if (world_.rank() == 0) {
    ResultFile file;
    file.attributes = attributes_;
    file.attributes["complete"] = "yes";
    file.attributes["hosts"] = fmt::format("{}", fmt::join(world_.node_names(), ","));
    for (int r = 0; r < static_cast<int>(all.size()); ++r) {
      const json j = json::parse(all[r]);
      for (auto& rec : decode_records(json_text(j.at("records"))))
        file.records.push_back(std::move(rec));
      for (const auto& [name, text] : j.at("documents").items()) {
        auto& slot = file.documents[name];
        slot.resize(all.size());
        slot[r] = text.get<std::string>();
      }
    }
    try {
      worst = write_final(std::move(file));
    } catch (const std::exception& e) {
      log_error("writing results failed: {}", e.what());
      worst = Status::Error;
    }
  }
  // Every rank exits with the job's verdict, so Slurm marks the step failed on all of them. A
  // rank the verdict cannot reach (a peer hung or died after the gather: PMIx 5 leaves the
  // fence unanswered, cluster.fault.rank_hang on Debian 13) ends with ERROR, its records kept.
  std::string verdict;
  try {
    verdict = world_.broadcast_string(std::string(to_string(worst)), 0);
  } catch (const std::exception& e) {
    log_error("the job's verdict did not reach this rank: {}", e.what());
    verdict = std::string(to_string(most_severe(worst, Status::Error)));
  }
  heartbeat_->stop();
  return parse_status(verdict);
}

Status ResultWriter::write_from_parts(const std::string& why) {
  MergedParts merged = merge_part_files(parts_dir(), world_.size());
  ResultFile file = std::move(merged.file);
  file.attributes = attributes_;
  file.attributes["complete"] = "partial";
  std::set<int>& reported = merged.reported;
  // Rank 0's own records are current even if its last checkpoint is not.
  std::erase_if(file.records, [&](const Record& r) { return r.rank == world_.rank(); });
  for (const auto& r : records_) file.records.push_back(r);
  reported.insert(world_.rank());
  std::vector<int> missing;
  for (int r = 0; r < world_.size(); ++r)
    if (!reported.count(r)) missing.push_back(r);
  Record err;
  err.rank = kJobLevel;
  err.test = "result_gather";
  err.status = Status::Error;
  err.message = missing.empty()
                    ? fmt::format("gathering results through World failed ({}); the file was written from the ranks' checkpoints", why)
                    : fmt::format("ranks {} did not report (died or hung?): {}", fmt::join(missing, ","), why);
  const auto silent = silent_ranks(parts_dir(), file.records);
  for (const auto& s : silent) err.message += "; " + describe(s);
  file.records.push_back(add(err));
  for (const auto& s : silent) file.records.push_back(add(silent_rank_record(s, phase_)));
  try {
    write_final(std::move(file));
  } catch (const std::exception& e) {
    log_error("writing results from checkpoints failed: {}", e.what());
  }
  return Status::Error;
}

}  // namespace gpuaccept
