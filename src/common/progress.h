// One progress line per step from rank 0, so an operator tailing slurm-*.out sees the
// phase, the step, its size, the time spent and what is left:
//   [nccl-scaling r0/8 node1] step 12/40 all_reduce 64MiB: 5.1s elapsed, ~12.0s left
#pragma once

#include <chrono>
#include <string>

namespace gpuaccept {

class Progress {
 public:
  explicit Progress(int total_steps);
  // Logs "step i/N <what>" with elapsed time and an estimate of what is left (rank 0 only).
  void step(const std::string& what);
  double elapsed_s() const;

 private:
  int total_;
  int done_ = 0;
  std::chrono::steady_clock::time_point start_;
};

// "8 B", "64 KiB", "1 GiB": message sizes as nccl-tests' readers expect them.
std::string format_bytes(double bytes);

}  // namespace gpuaccept
