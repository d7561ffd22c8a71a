// How a training phase (ddp, fsdp-lora) stops after a fault: a step that timed out
// (RankRuntime's Fault), a failed CUDA/cuBLAS/NCCL call or a kernel launch. One way out for
// both phases, so an operator reads the same records and log lines whichever phase broke,
// and the other ranks are told at once instead of waiting for their deadline in a collective.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cuda/rank_runtime.h"
#include "results/result_writer.h"
#include "world/world.h"

namespace gpuaccept::train {

// A training phase's RankRuntime: its arrival board in <run>/<phase>.arrivals (rank 0 creates
// the abort file) and, as the watchdog's last resort when the main thread stays stuck, a
// training FAIL naming this rank and `stage` (read when it fires), the results written and
// the process ended. `stage` must outlive the runtime.
std::unique_ptr<RankRuntime> open_training_runtime(World& world, ResultWriter& results, const std::string& phase,
                                                   int device, const RuntimeOptions& deadlines,
                                                   const std::string& stage);
// After the last run, on every rank: the runtime shut down and freed, then (after a barrier)
// rank 0 removes the arrival board, which nobody writes any more.
void close_training_runtime(World& world, std::unique_ptr<RankRuntime>& rt);

// After a fault in a step: which ranks of its communicator had not reached it, read from the
// arrival board (no collective: one would hang), their progress in train/arrival_progress.h's
// words. Empty when the wait had no step.
std::string who_did_not_arrive(const Fault& fault, RankRuntime& rt, int self_rank);

// The way out: logs "<phase> stops during <stage>: <what>"; with a runtime (rt may be null:
// the fault came before it) acknowledges the fault, names the ranks that did not arrive,
// aborts the communicators and raises the abort for the others; then `record_progress`
// records what this rank completed and says it in words (e.g. "run 'all' had completed 7
// steps"), the training check FAILs with all of it, the results are checkpointed, and the
// process is given 240 s to finish writing before it ends itself. fault may be null (not a
// step's timeout).
void stop_after_fault(World& world, ResultWriter& results, RankRuntime* rt, const Fault* fault, const std::string& what,
                      const std::string& phase, const std::string& stage,
                      const std::function<std::string()>& record_progress);

}  // namespace gpuaccept::train
