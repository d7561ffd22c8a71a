// The training checkpoint drill of ddp and fsdp-lora (docs/results-format.md, "Training
// checkpoints") as a part of their phase details: per job, the step saved, its size, the time
// until it was a valid checkpoint, the aggregate write and read beside a dd-style sequential
// write and read of the same bytes, the efficiency and the verdicts of save, restore and
// resume; and each node's write bandwidth as bars.
#pragma once

#include <string>

#include "model/report.h"

namespace gpuaccept::report {

// An HTML fragment; "" when the phase recorded no checkpoint test.
std::string checkpoint_part(const Report& r, const std::string& phase);

}  // namespace gpuaccept::report
