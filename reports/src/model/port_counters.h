// The report's judgement of the RDMA ports' error counters across a run (docs/fabric.md).
// Every phase's local rank 0 of each node writes the document `port_counters`: the node's
// counters per port at the phase's start and end. Per node, port and counter the readings
// are put in pipeline order (discover, smoke, nccl-scaling, ddp, fsdp-lora; a phase run
// twice by its start time), from the start of the earliest phase to the end of the latest:
//   - any increase between two readings is a FAIL of its own, a record of test
//     `port_counters` about that node (the phase it was first seen in), naming port, counter,
//     from -> to and the phases read; a counter that rises again after a reset still rose;
//   - a counter that went down (a reset: driver reload, reboot, someone clearing it) and
//     never rose is a WARN note;
//   - a counter at the largest value its width holds (the PortCounters attribute's counters
//     stop there instead of wrapping) cannot show a rise: a WARN note too;
//   - no document at all: nothing is judged, and the Fabric section says so (SKIP).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/level.h"
#include "results/record.h"
#include "run/loaded_run.h"

namespace gpuaccept::report {

// The record test of the report's own port counter checks.
inline constexpr const char* kPortCountersTest = "port_counters";

// The counters judged: those that count faults of the link or the port. port_xmit_discards
// is left out: it counts congestion, not a fault. Others in a document are ignored.
const std::vector<std::string>& judged_port_counters();

// One counter of one port of one node that moved during the run, or cannot show a move.
struct CounterChange {
  std::string node, port, counter;  // port: "mlx5_0/1"
  std::uint64_t from = 0, to = 0;   // the first and the last reading
  std::uint64_t rise = 0;           // the sum of the increases between consecutive readings
  bool reset = false;               // went down between two readings
  bool saturated = false;           // the last reading is the counter's largest value
  std::string read_from, read_to;   // "the start of discover", "the end of fsdp-lora"
  std::string first_rise;           // "during smoke", "between the end of smoke and the start of ddp"
  std::string phase;                // the phase the rise was first seen in (its FAIL record's)
  Level level = Level::Pass;        // FAIL (rose) or WARN (went down, or saturated)
  std::string message;
};

struct PortCounterJudgement {
  std::vector<CounterChange> changes;  // FAILs and WARNs, by node, port, counter
  std::vector<Record> checks;          // one FAIL record per counter that rose
  std::vector<std::string> problems;   // documents or values that could not be read, and why
  int documents = 0;                   // port_counters documents read
  int nodes = 0;                       // nodes with at least one
  int ports = 0;                       // node ports with counters judged
  std::string skipped;                 // why nothing was judged; "" when something was

  // FAIL when a counter rose, WARN for notes only, PASS, or SKIP when nothing was judged.
  Level level() const;
};

PortCounterJudgement judge_port_counters(const LoadedRun& run);

}  // namespace gpuaccept::report
