// ResultWriter: collects this rank's records during a phase and, at the end, has
// rank 0 gather every rank's records through World and write <run>/<phase>.h5.
//
// Nothing measured is lost when a rank or node fails: checkpoint() writes this
// rank's records so far to <run>/<phase>.parts/rank-NNNNN.h5, and if the final
// gather fails rank 0 writes the phase file from those parts plus an ERROR record
// naming every rank that did not report.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "results/heartbeat.h"
#include "results/record.h"
#include "results/result_file.h"
#include "world/world.h"

namespace gpuaccept {

class ResultWriter {
 public:
  // `attributes` are the file attributes known at start (tool version, config, ...).
  ResultWriter(World& world, std::string phase, std::filesystem::path run_dir,
               std::map<std::string, std::string> attributes);

  // Adds a record, filling phase, job ids, rank and node where the caller left them empty.
  Record& add(Record r);
  // A check without a measured value.
  Record& check(const std::string& test, Status status, const std::string& message, Params params = {});
  // A measurement, PASS unless the caller changes its status.
  Record& measure(const std::string& test, const std::string& metric, double value, const std::string& unit,
                  Params params = {});
  // The same about the whole job (rank kJobLevel, no node; results/record.h blames_node):
  // what rank 0 concludes from every rank's figures (the loss curve of all GPUs, learning,
  // replicas, scaling). Written by one rank, it blames no node, the writer's included.
  Record& job_check(const std::string& test, Status status, const std::string& message, Params params = {});
  Record& job_measure(const std::string& test, const std::string& metric, double value, const std::string& unit,
                      Params params = {});
  // A rank's JSON document under `name` (e.g. its inventory); one per rank.
  void set_document(const std::string& name, std::string json_text);

  const std::vector<Record>& records() const { return records_; }
  const std::filesystem::path& run_dir() const { return run_dir_; }
  const std::string& phase() const { return phase_; }

  // Writes this rank's records so far to its part file (atomically replaced).
  void checkpoint();

  // Gathers and writes the phase file (rank 0); returns on every rank the most
  // severe status of all ranks' records. After a failed gather, rank 0 falls back
  // to the part files and other ranks return their own worst status.
  Status finish();
  const std::filesystem::path& written_path() const { return written_; }

 private:
  World& world_;
  std::string phase_;
  std::filesystem::path run_dir_;
  std::map<std::string, std::string> attributes_;
  std::vector<Record> records_;
  std::map<std::string, std::string> documents_;
  std::filesystem::path written_;
  std::unique_ptr<Heartbeat> heartbeat_;  // <phase>.parts/rank-N.alive until the phase file is written

  std::filesystem::path parts_dir() const;
  ResultFile local_file() const;
  Status write_from_parts(const std::string& why);
  Status write_final(ResultFile file);
};

// ISO 8601 UTC time, for the start_time/end_time attributes.
std::string utc_now();

}  // namespace gpuaccept
