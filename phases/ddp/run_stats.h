// The arithmetic behind the ddp phase's learning check, kept free of CUDA and MPI so the unit
// tests (tests/unit/ddp) check it. The step timings, the replica hash and the MFU peak are
// src/train's (train/step_timing.h, train/weights_hash.h, train/gpu_peak.h), shared with fsdp-lora.
#pragma once

namespace gpuaccept::ddp {

// The learning check's bound: ln(vocab) - fraction * (ln(vocab) - floor), i.e. the loss must
// have covered `fraction` of the way from a uniform guess down to the data's floor.
double learning_threshold(int vocab, double floor, double fraction);

}  // namespace gpuaccept::ddp
