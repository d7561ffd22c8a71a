// The one record type every phase writes: a check (status + message) or a measurement
// (metric, value, unit), tagged with where it was taken (rank, node, GPU) and the
// parameters that distinguish it (message size, dtype, scale, ...).
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gpuaccept {

// Ordered by severity: a summary's status is the most severe of its records.
enum class Status { Pass = 0, Skip = 1, Fail = 2, Error = 3 };

std::string_view to_string(Status s);
Status parse_status(std::string_view text);  // "PASS", "FAIL", "SKIP", "ERROR"; throws InputError
Status most_severe(Status a, Status b);
bool is_failure(Status s);  // FAIL or ERROR

using Params = std::map<std::string, std::string>;

inline constexpr int kJobLevel = -1;   // a record about the whole job (e.g. "all nodes alike")
inline constexpr int kRankUnset = -2;  // ResultWriter::add() fills in the writing rank

// params["cause"] = "peer": this rank failed because another rank or node did not take its
// part (a collective that timed out, a training step a peer never reached). The record stays
// this rank's, but it blames no node: the report's node actions do not drain the survivors of
// a lost node. The one that stopped is named by its own records, or by the heartbeat records
// written for it (results/heartbeat.h).
inline constexpr const char* kCauseParam = "cause";
inline constexpr const char* kCausePeer = "peer";

struct Record {
  std::string phase;
  std::string job_id;         // SLURM_JOB_ID of the step's job ("" outside Slurm)
  std::string array_job_id;   // SLURM_ARRAY_JOB_ID ("" outside an array)
  std::string array_task_id;  // SLURM_ARRAY_TASK_ID
  int rank = kRankUnset;      // kJobLevel: a record about the whole job, written by rank 0
  std::string node;
  int gpu_index = -1;  // the GPU on its node, as nvidia-smi numbers it (hw/node_gpu_index.h); -1: not about one GPU
  std::string gpu_uuid;
  std::string test;    // e.g. "gpus_per_node", "all_reduce"
  std::string metric;  // e.g. "busbw"; "" for a pure check
  double value = std::numeric_limits<double>::quiet_NaN();
  std::string unit;
  Params params;
  Status status = Status::Pass;
  std::string message;

  bool has_value() const { return !std::isnan(value); }
  bool operator==(const Record& o) const;
};

bool caused_by_peer(const Record& r);  // params["cause"] == "peer" (kCauseParam)

// Whom a record is about (docs/results-format.md, "Whom a record is about"): a record with a
// node name is about that node, whichever rank wrote it (its own rank, or rank 0 judging every
// rank's facts: rank kJobLevel); a record without one is about the whole job (nodes not alike,
// a collective across nodes, the loss curve of all GPUs) and names no node. So a FAIL or ERROR
// with a node drains that node (the report's node actions), unless a peer caused it.
bool blames_node(const Record& r);  // !node.empty() && !caused_by_peer(r)

// A check about one node as a whole, judged by rank 0 from every rank's facts (GPUs per node,
// a node's binding, its Slurm state): rank kJobLevel, `node` set.
Record node_record(std::string node, std::string test);
// A check about the whole job, naming no node: rank kJobLevel, `node` "".
Record job_record(std::string test);

// Parameters as a JSON object text, the form they take in the HDF5 file.
std::string encode_params(const Params& p);
Params decode_params(std::string_view json_text);

// Records as JSON text: how ranks send them to rank 0 through World.
std::string encode_records(const std::vector<Record>& records);
std::vector<Record> decode_records(std::string_view json_text);

}  // namespace gpuaccept
