#include "train/checkpoint_drill.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "common/log.h"
#include "train/sequential_io.h"

namespace gpuaccept::train {

namespace {

using nlohmann::json;

constexpr double kGB = 1e9;

// One rank's I/O figures, as rank 0 gathers them.
struct RankIo {
  std::uint64_t bytes = 0;
  double write_s = 0, fsync_s = 0, read_s = 0;  // fsync_s: the part of write_s spent in fsync
  std::string error;
};

std::vector<RankIo> gather_io(World& world, const RankIo& mine) {
  const json j{{"bytes", mine.bytes}, {"write_s", mine.write_s}, {"fsync_s", mine.fsync_s}, {"read_s", mine.read_s},
               {"error", mine.error}};
  std::vector<RankIo> all;
  for (const std::string& s : world.gather_string(json_text(j), 0)) {
    const json r = json::parse(s);
    all.push_back({r.at("bytes").get<std::uint64_t>(), r.at("write_s").get<double>(), r.at("fsync_s").get<double>(),
                   r.at("read_s").get<double>(), r.at("error").get<std::string>()});
  }
  return all;
}

// Where a write's seconds went: in write() (hashing, copying into the page cache and, for the
// checkpoint's writer, the disk's writeback it starts behind itself), then in fsync waiting for
// what the disk has left. Where the checkpoint trails the yardstick, this says which half it
// loses in.
std::string write_split(double write_s, double fsync_s) {
  return fmt::format("{:.3f} s in write(), {:.3f} s in fsync", write_s - fsync_s, fsync_s);
}

std::string host_of(World& world, int rank) {
  return world.node_names()[static_cast<std::size_t>(world.rank_nodes()[static_cast<std::size_t>(rank)])];
}

double gbps(std::uint64_t bytes, double s) { return s > 0 ? static_cast<double>(bytes) / s / kGB : 0.0; }

// Bytes over the slowest rank's seconds: all ranks started together (after a collective).
double aggregate(const std::vector<std::uint64_t>& bytes, const std::vector<double>& seconds) {
  std::uint64_t b = 0;
  double slowest = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    b += bytes[i];
    slowest = std::max(slowest, seconds[i]);
  }
  return gbps(b, slowest);
}

Record per_rank(World& world, const std::string& test, const std::string& metric, double value, int rank,
                Params params = {}) {
  Record r;
  r.test = test;
  r.metric = metric;
  r.value = value;
  r.unit = "GB/s";
  r.rank = rank;
  r.node = host_of(world, rank);
  r.params = std::move(params);
  return r;
}

// A record about the whole job (rank kJobLevel, no node: ResultWriter::job_measure).
Record& job_record(ResultWriter& out, const std::string& test, const std::string& metric, double value,
                   const std::string& unit, Status status = Status::Pass, const std::string& message = {}) {
  Record& r = out.job_measure(test, metric, value, unit);
  r.status = status;
  r.message = message;
  return r;
}

Record& job_check(ResultWriter& out, const std::string& test, Status status, const std::string& message) {
  return out.job_check(test, status, message);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

CheckpointDrill::CheckpointDrill(World& world, ResultWriter& results, const CheckpointConfig& config,
                                 CheckpointManifest header, std::vector<DeviceStateTensor> state)
    : world_(world), results_(results), config_(config), phase_(header.phase), state_(std::move(state)) {
  const std::filesystem::path root =
      config_.dir.empty() ? results_.run_dir() / "checkpoints" / phase_ : std::filesystem::path(config_.dir) / phase_;
  checkpoint_ = std::make_unique<TrainingCheckpoint>(world_, root, std::move(header), state_);
}

void CheckpointDrill::after_main_step(int step) {
  if (step == config_.step) {
    log_rank0("{}: checkpoint: saving the state after step {} ({:.2f} GB, {:.2f} GB per rank) to {}", phase_, step,
              static_cast<double>(checkpoint_->state_bytes()) / kGB, static_cast<double>(checkpoint_->slice_bytes()) / kGB,
              checkpoint_->root().string());
    const CheckpointSave save = checkpoint_->save(step, stream_);
    saved_ = save.complete;
    record_save(save);
  }
  if (step == last_step()) main_checksum_ = state_checksum(state_, world_.size(), stream_);
}

void CheckpointDrill::record_save(const CheckpointSave& save) {
  const std::string test = "checkpoint_save";
  if (world_.rank() != 0) return;
  std::vector<std::uint64_t> bytes;
  std::vector<double> seconds;
  std::map<std::string, std::pair<std::uint64_t, double>> by_node;  // bytes, slowest seconds
  double slowest_s = -1;  // of the ranks that wrote: their split goes into the efficiency record
  for (const RankWrite& w : save.ranks) {
    const double s = w.stage_s + w.write_s;  // the device-to-host copies are part of the cost
    // Params: the step only, so that every rank is the others' peer in the fleet rule
    // (slices differ by a remainder); the bytes go in the message.
    Record r = per_rank(world_, test, "write_bandwidth", w.error.empty() ? gbps(w.bytes, s) : 0.0, w.rank,
                        {{"step", std::to_string(config_.step)}});
    r.message = w.error.empty() ? fmt::format("{} bytes in {:.3f} s (device to host {:.3f} s, file {:.3f} s: {})",
                                              w.bytes, s, w.stage_s, w.write_s, write_split(w.write_s, w.fsync_s))
                                : w.error;
    if (!w.error.empty()) r.status = Status::Fail;
    results_.add(r);
    if (w.error.empty() && s > slowest_s) {
      slowest_s = s;
      save_slowest_ = fmt::format("rank {}: {}", w.rank, write_split(w.write_s, w.fsync_s));
    }
    bytes.push_back(w.bytes);
    seconds.push_back(s);
    auto& n = by_node[w.host];
    n.first += w.bytes;
    n.second = std::max(n.second, s);
  }
  for (const auto& [node, figures] : by_node) {
    Record r = per_rank(world_, test, "node_write_bandwidth", gbps(figures.first, figures.second), 0);
    r.rank = kJobLevel;
    r.node = node;
    results_.add(r);
  }
  std::uint64_t total = 0;
  for (auto b : bytes) total += b;
  save_write_gbps_ = aggregate(bytes, seconds);
  job_record(results_, test, "aggregate_write_bandwidth", save_write_gbps_, "GB/s");
  job_record(results_, test, "seconds_to_consistent", save.consistent_s, "s");
  job_record(results_, test, "bytes", static_cast<double>(total), "B");
  const std::string message =
      save.complete
          ? fmt::format("step {}: {} files, {:.3f} GB, manifest written in {} after {:.2f} s (aggregate {:.2f} GB/s)",
                        config_.step, save.ranks.size(), static_cast<double>(total) / kGB, save.dir.string(),
                        save.consistent_s, save_write_gbps_)
          : fmt::format("step {}: no manifest written, the checkpoint in {} is not valid: {}", config_.step,
                        save.dir.string(), save.error);
  job_check(results_, test, save.complete ? Status::Pass : Status::Fail, message);
  log_rank0("{}: checkpoint save {}: {}", phase_, save.complete ? "PASS" : "FAIL", message);
}

void CheckpointDrill::baseline() {
  if (!config_.baseline) {
    if (world_.rank() == 0)
      job_check(results_, "checkpoint_baseline", Status::Skip, fmt::format("{} checkpoint.baseline is false", phase_));
    return;
  }
  // Beside the checkpoints, on the same filesystem; the same bytes per rank, all at once.
  const std::filesystem::path dir = checkpoint_->root() / "sequential-io";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path file = dir / fmt::format("rank-{:05d}.tmp", world_.rank());
  RankIo mine;
  mine.bytes = checkpoint_->slice_bytes();
  world_.barrier();
  try {
    mine.write_s = sequential_write(file, mine.bytes, &mine.fsync_s);
  } catch (const std::exception& e) {
    mine.error = e.what();
  }
  world_.barrier();  // every write done before any read: the reads alone are measured
  if (mine.error.empty()) {
    try {
      mine.read_s = sequential_read(file, mine.bytes);
    } catch (const std::exception& e) {
      mine.error = e.what();
    }
  }
  const std::vector<RankIo> all = gather_io(world_, mine);
  if (world_.rank() != 0) return;
  std::filesystem::remove(dir, ec);  // empty once every rank removed its file
  std::vector<std::uint64_t> bytes;
  std::vector<double> writes, reads;
  std::string errors, slowest;  // slowest: the split of the slowest rank that wrote
  double slowest_s = -1;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const int rank = static_cast<int>(r);
    Record write = per_rank(world_, "checkpoint_baseline", "write_bandwidth", gbps(all[r].bytes, all[r].write_s), rank);
    if (all[r].error.empty()) {
      write.message = fmt::format("{} bytes in {:.3f} s: {}", all[r].bytes, all[r].write_s,
                                  write_split(all[r].write_s, all[r].fsync_s));
      if (all[r].write_s > slowest_s) {
        slowest_s = all[r].write_s;
        slowest = fmt::format("rank {}: {}", r, write_split(all[r].write_s, all[r].fsync_s));
      }
    }
    results_.add(write);
    results_.add(per_rank(world_, "checkpoint_baseline", "read_bandwidth", gbps(all[r].bytes, all[r].read_s), rank));
    if (!all[r].error.empty()) errors += fmt::format("{}rank {} ({}): {}", errors.empty() ? "" : "; ", r, host_of(world_, rank), all[r].error);
    bytes.push_back(all[r].bytes);
    writes.push_back(all[r].write_s);
    reads.push_back(all[r].read_s);
  }
  if (!errors.empty()) {
    job_check(results_, "checkpoint_baseline", Status::Fail, errors);
    return;
  }
  const double w = aggregate(bytes, writes), rd = aggregate(bytes, reads);
  job_record(results_, "checkpoint_baseline", "aggregate_write_bandwidth", w, "GB/s");
  job_record(results_, "checkpoint_baseline", "aggregate_read_bandwidth", rd, "GB/s");
  log_rank0("{}: checkpoint: dd-style sequential I/O of the same {:.3f} GB per rank: write {:.2f} GB/s, read {:.2f} GB/s "
            "(aggregate)", phase_, static_cast<double>(mine.bytes) / kGB, w, rd);
  if (saved_ && w > 0) {
    const double pct = 100.0 * save_write_gbps_ / w;
    // The largest slice, for thresholds: a save of a few MB a rank is mostly its fixed costs
    // (the manifest, the fsyncs), which a comparison of bandwidths does not judge.
    const std::uint64_t largest = *std::max_element(bytes.begin(), bytes.end());
    job_record(results_, "checkpoint_efficiency", "write_vs_sequential", pct, "%", Status::Pass,
               fmt::format("checkpoint write {:.2f} GB/s vs dd-style {:.2f} GB/s of the same bytes per rank; "
                           "the slowest rank's file time, checkpoint {}, dd-style {}",
                           save_write_gbps_, w, save_slowest_, slowest))
        .params = {{"bytes_per_rank", std::to_string(largest)}};
    log_rank0("{}: checkpoint write at {:.0f}% of the sequential write (the slowest rank's file time: checkpoint {}; "
              "dd-style {})", phase_, pct, save_slowest_, slowest);
  }
}

bool CheckpointDrill::restore(ncclComm_t comm, RankRuntime& runtime, double timeout_s) {
  RankIo mine;
  std::string found;
  double total_s = 0;
  try {
    const CheckpointRestore r = checkpoint_->restore(comm, runtime, stream_, timeout_s);
    mine.bytes = r.bytes_read;
    mine.read_s = r.read_s;
    total_s = r.total_s;
    found = r.found.dir.string();
  } catch (const InputError& e) {
    // No checkpoint, another model's, a damaged file: this rank's account, named. (A Fault,
    // a peer lost during the broadcasts, goes to the phase's fault path.)
    mine.error = e.what();
  }
  const std::vector<RankIo> all = gather_io(world_, mine);
  std::string errors;
  std::vector<std::uint64_t> bytes;
  std::vector<double> reads;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (!all[r].error.empty())
      errors += fmt::format("{}rank {} ({}): {}", errors.empty() ? "" : "; ", r, host_of(world_, static_cast<int>(r)), all[r].error);
    bytes.push_back(all[r].bytes);
    reads.push_back(all[r].read_s);
    if (world_.rank() == 0)
      results_.add(per_rank(world_, "checkpoint_restore", "read_bandwidth", gbps(all[r].bytes, all[r].read_s), static_cast<int>(r)));
  }
  if (world_.rank() == 0) {
    if (errors.empty()) {
      const double rd = aggregate(bytes, reads);
      job_record(results_, "checkpoint_restore", "aggregate_read_bandwidth", rd, "GB/s");
      job_record(results_, "checkpoint_restore", "seconds", total_s, "s");
      const std::string message = fmt::format(
          "{}: every rank read and verified (XXH3) its slices at {:.2f} GB/s aggregate; every replica whole after {:.2f} s",
          found, rd, total_s);
      job_check(results_, "checkpoint_restore", Status::Pass, message);
      log_rank0("{}: checkpoint restore PASS: {}", phase_, message);
    } else {
      job_check(results_, "checkpoint_restore", Status::Fail, errors);
      log_rank0("{}: checkpoint restore FAIL: {}", phase_, errors);
    }
  }
  // Every rank must agree whether to run the resumed steps (they are collective).
  return world_.broadcast_string(errors.empty() ? "1" : "0", 0) == "1";
}

void CheckpointDrill::record_resume(const std::vector<StepRecord>& main_run, const std::vector<StepRecord>& resumed) {
  // The first resumed step's loss is a forward pass over the restored weights and the step's
  // batch: any restore, data-order or RNG error shows there, so it must be bit-equal. What
  // follows goes through the backward pass, whose float atomics (ddp: embedding and LayerNorm
  // weight gradients; their order is not fixed) make even two runs that never stopped differ
  // in the last bits: later losses and gradient norms are held to kResumeRelTolerance, and the
  // state after the last step is reported bit-equal or not.
  constexpr double kResumeRelTolerance = 1e-4;
  std::string differs;
  double worst = 0;
  for (const StepRecord& r : resumed) {
    const auto m = std::find_if(main_run.begin(), main_run.end(), [&](const StepRecord& s) { return s.step == r.step; });
    if (m == main_run.end()) {
      differs = fmt::format("step {} is not in the main run", r.step);
      break;
    }
    const double dl = std::abs(r.loss - m->loss) / std::max(std::abs(m->loss), 1e-30);
    const double dn = std::abs(r.grad_norm - m->grad_norm) / std::max(std::abs(m->grad_norm), 1e-30);
    worst = std::max({worst, dl, dn});
    if ((r.step == config_.step + 1 && !same_bits(m->loss, r.loss)) || !(dl <= kResumeRelTolerance) ||
        !(dn <= kResumeRelTolerance)) {
      differs = fmt::format("step {}: loss {:.9g} vs {:.9g} without the restart, gradient norm {:.9g} vs {:.9g}{}", r.step,
                            r.loss, m->loss, r.grad_norm, m->grad_norm,
                            r.step == config_.step + 1 ? " (the first step after the restore must be bit-equal)"
                                                       : fmt::format(" (beyond {:.0e} relative)", kResumeRelTolerance));
      break;
    }
  }
  if (differs.empty() && static_cast<int>(resumed.size()) != config_.resume_steps)
    differs = fmt::format("{} of {} steps ran after the restore", resumed.size(), config_.resume_steps);
  std::string state;  // "ok:<the state after the last step>:<largest relative difference>" or "fail:<why>"
  if (differs.empty())
    state = state_checksum(state_, world_.size(), stream_) == main_checksum_ ? "bit-equal"
                                                               : "not bit-equal (float atomics in the backward pass)";
  const std::string mine = differs.empty() ? "ok:" + state + fmt::format(":{:.2e}", worst) : "fail:" + differs;
  const std::vector<std::string> all = world_.gather_string(mine, 0);
  if (world_.rank() != 0) return;
  std::string failed;
  bool exact = true;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].starts_with("fail:"))
      failed += fmt::format("{}rank {} ({}): {}", failed.empty() ? "" : "; ", r, host_of(world_, static_cast<int>(r)),
                            all[r].substr(5));
    else if (!all[r].starts_with("ok:bit-equal:0.00e+00"))
      exact = false;
  }
  const std::string message =
      !failed.empty() ? failed
      : exact
          ? fmt::format("steps {}-{} after restoring step {}: losses, gradient norms and the state (weights and AdamW "
                        "moments) bit-equal to the run that never stopped, on every rank",
                        config_.step + 1, last_step(), config_.step)
          : fmt::format("steps {}-{} after restoring step {}: step {}'s loss bit-equal to the run that never stopped "
                        "(the restored weights, data order and RNG are exact); later steps within {:.0e} relative "
                        "(rank 0: largest difference {}), the state after step {} {}",
                        config_.step + 1, last_step(), config_.step, config_.step + 1, kResumeRelTolerance,
                        all[0].substr(all[0].rfind(':') + 1), last_step(),
                        all[0].substr(3, all[0].rfind(':') - 3));
  job_check(results_, "checkpoint_resume", failed.empty() ? Status::Pass : Status::Fail, message);
  log_rank0("{}: checkpoint resume {}: {}", phase_, failed.empty() ? "PASS" : "FAIL", message);
}

void CheckpointDrill::finish(ncclComm_t comm, RankRuntime& runtime, double timeout_s,
                             const std::vector<StepRecord>& main_run,
                             const std::function<std::vector<StepRecord>()>& run_resumed, std::string& stage) {
  stage = "checkpoint: sequential I/O yardstick";
  baseline();
  stage = "checkpoint: restore";
  if (!restore(comm, runtime, timeout_s)) {
    if (world_.rank() == 0) record_resume_skipped(results_, "nothing was restored (checkpoint_restore says why)");
    return;
  }
  stage = "checkpoint: resumed steps";
  record_resume(main_run, run_resumed());
}

void record_resume_skipped(ResultWriter& results, const std::string& why) {
  job_check(results, "checkpoint_resume", Status::Skip, why);
}

}  // namespace gpuaccept::train
