// What the sweep runs, from flags (nccl-tests' names where nccl-tests has them), the
// config file (nccl.* keys) and the profile's defaults, in that order of precedence.
//
// Profiles (nccl.profile / --profile):
//  - quick (default): 8 B .. 8 GiB by x2, warmup 5, iters 20 per batch, 3 batches; above
//    256 MiB the warmup and iteration counts shrink in proportion to the size (at least
//    2): the large sizes take the time, and they need few iterations for a stable figure.
//  - full: the same sizes, 5 batches of 20 iterations at every size.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/debug_fault.h"
#include "config/config.h"
#include "nccl-scaling/dtype.h"

namespace gpuaccept::nccl_scaling {

// HcaLoopback: each node's GPUs through its own HCAs, NCCL's P2P and SHM off (hca_loopback.h).
enum class Scale { IntraNode, InterNode, All, GpuPair, NodePair, HcaLoopback };
std::string_view scale_name(Scale s);  // "intra_node", ..., "gpu_pair", "node_pair", "hca_loopback"
std::optional<Scale> parse_scale(std::string_view s);
bool is_pair_scale(Scale s);

enum class Profile { Quick, Full };
enum class PairMode { OneGpu, AllGpus };  // node pairs: local rank 0 of each node, or every GPU

struct Options {
  Profile profile = Profile::Quick;
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{8} << 30;
  int step_factor = 2;
  int iters = 20;        // operations per timed batch (nccl-tests -n)
  int warmup_iters = 5;  // nccl-tests -w
  int batches = 3;       // timed batches per size; the time is their median
  bool check = true;     // verify every size's result on the device (nccl-tests -c)
  std::vector<std::string> collectives;
  std::vector<Dtype> dtypes;
  std::vector<Scale> scales;
  double timeout_s = 120;  // per batch of collectives
  std::size_t pair_bytes = std::size_t{256} << 20;
  PairMode pair_mode = PairMode::AllGpus;
  double pair_outlier_pct = 15;
  bool nonblocking = false;            // ncclConfig_t.blocking = 0 (see README: the cost)
  double checkpoint_interval_s = 5;    // results checkpoints at most this often (0: every size)
  double heartbeat_s = 5;              // arrival-board heartbeat period
  double scale_budget_s = 60;          // seconds a scale's sweep may take (scale_budget.h); 0: none
  bool loopback_without_rdma = false;  // hidden: hca_loopback over whatever NCCL finds (the GPU machine has no HCA)
  DebugFault debug_fault;  // hidden fault injection for tests/gpu/nccl_kill.sh
};

// Flag values as parsed; `given` tells which flags were on the command line.
struct CliValues {
  std::string min_bytes, max_bytes, pair_bytes, profile, pair_mode;
  int step_factor = 0, iters = 0, warmup_iters = 0, batches = 0, check = 1;
  double timeout_s = 0, pair_outlier_pct = 0, checkpoint_interval_s = 0, scale_budget_s = 0;
  std::vector<std::string> collectives, dtypes, scales;
  bool nonblocking = false;
  bool loopback_without_rdma = false;
  DebugFault debug_fault;
  std::vector<const CLI::Option*> options;  // filled by add_cli_options
  bool given(std::string_view long_name) const;
};

void add_cli_options(CLI::App& app, CliValues& v);

// Flags over config over profile defaults. Throws InputError naming the flag or key.
Options resolve_options(const CliValues& cli, const Config& config);

// nccl-tests' size syntax: "8", "64K", "256M", "8G" (binary units; a trailing "B" or "iB"
// is accepted). nullopt when malformed.
std::optional<std::size_t> parse_size(std::string_view text);

// min, min*factor, ... while <= max (nccl-tests' -b/-e/-f loop).
std::vector<std::size_t> size_sweep(std::size_t min_bytes, std::size_t max_bytes, int factor);

struct IterPlan {
  int warmup = 0;
  int iters = 0;    // per batch
  int batches = 0;
};
IterPlan iter_plan(const Options& o, std::size_t bytes);

}  // namespace gpuaccept::nccl_scaling
