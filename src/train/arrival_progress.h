// A training step's arrival progress (cuda/arrival_board.h): the value a rank posts when it
// reaches the step. It is the same on every rank of the run and rises over a training phase's
// runs (all, resume, equivalence, single_gpu, node, in that order; ddp runs them all, fsdp-lora
// all but node),
// so after a timeout a rank whose progress is behind its peers' is one that did not arrive.
// Shared by both training phases so that one fault report (train/fault_stop.h) reads either.
#pragma once

#include <string>

namespace gpuaccept::train {

// Throws std::logic_error for a run label not in the list above.
long long arrival_progress(const std::string& run_label, int step);
// "step 5 of run 'all'"; progress below the first run: "set-up, before the first step".
std::string describe_arrival_progress(long long progress);

}  // namespace gpuaccept::train
