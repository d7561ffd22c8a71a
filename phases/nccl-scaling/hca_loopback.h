// One node's HCAs without a peer (issue 37; Azure's node health checks do the same): the
// node's GPUs all-reduce with NCCL's P2P and SHM transports turned off, so every byte leaves
// through the node's own RDMA ports and comes back (through the NIC, or the switch for two
// NICs): a node with one bad HCA, cable or port FAILs even in a one-node job, against the same
// line rate the fabric is judged by (line_rate.h).
//
// NCCL reads NCCL_P2P_DISABLE and NCCL_SHM_DISABLE once per process, so the all-reduce runs in
// a child process per rank (gpuaccept-nccl-loopback, loopback_main.cpp) started with them set:
// the node's first rank makes the NCCL id, World hands it to the node's ranks, each starts its
// child on its own GPU and reads back one line of JSON (time per operation, wrong elements).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nccl-scaling/line_rate.h"
#include "results/record.h"

namespace gpuaccept::nccl_scaling {

struct LoopbackArgs {
  std::string nccl_id_hex;  // the node's ncclUniqueId
  int rank = 0, nranks = 0, device = 0;
  std::size_t bytes = 0;
  int warmup = 5, iters = 20;
  std::string nccl_log;     // where the child's NCCL writes its log ("": not observed)
};

// What one rank's child reported: its JSON line, or why there is none.
struct LoopbackAnswer {
  double time_us = 0;
  long long wrong = -1;
  std::string transports;  // the kinds NCCL logged in the child, "+"-joined ("NET/IB/GDRDMA")
  std::string error;       // non-empty: the child failed (its message, its exit, the time limit)
};

// Runs the child (the binary beside this one) with P2P and SHM off, at most `limit`.
LoopbackAnswer run_loopback_child(const LoopbackArgs& args, std::chrono::milliseconds limit);

// The JSON line a child prints, and its reading (a malformed line is an error answer).
std::string loopback_answer_text(const LoopbackAnswer& a);
LoopbackAnswer parse_loopback_answer(const std::string& text);

// Rank 0's record for one node from its ranks' answers: test `hca_loopback`, metric busbw
// (all_reduce's: size / mean time x 2(n-1)/n), with the node's line rate as the report's
// min_line_rate_fraction rule reads it. FAIL when a child failed or counted wrong elements.
Record hca_loopback_record(const std::string& host, const std::vector<LoopbackAnswer>& answers, std::size_t bytes,
                           const LineRate& line_rate);

// ncclUniqueId <-> hex, for handing it to the children on their command line.
std::string to_hex(const void* data, std::size_t n);
bool from_hex(const std::string& hex, void* data, std::size_t n);

}  // namespace gpuaccept::nccl_scaling
