// The checkpoint drill's settings, the same keys under both training phases' sections
// (`ddp.checkpoint.*`, `fsdp_lora.checkpoint.*`):
//   enabled       true     save, restore and resume during the phase
//   step          0        the main run's step after which the state is saved (0: half its steps)
//   resume_steps  2        steps run after the restore, compared bit for bit with the main run
//   dir           ""       where checkpoints go ("": <run dir>/checkpoints/<phase>)
//   baseline      true     a dd-style sequential write and read of the same bytes beside it
//   include_base  false    fsdp-lora only: each rank's frozen base shard saved too
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"

namespace gpuaccept::train {

struct CheckpointConfig {
  bool enabled = true;
  int step = 0;
  int resume_steps = 2;
  std::string dir;
  bool baseline = true;
  bool include_base = false;
};

// `steps`: the main run's steps (the save and the resumed steps must lie inside it: refused,
// naming the key, otherwise). allow_include_base: the phase has a frozen base to save.
CheckpointConfig load_checkpoint_config(const Config& c, std::string_view section, int steps, bool allow_include_base);

}  // namespace gpuaccept::train
