#include "nccl-scaling/schedule.h"

#include <algorithm>

namespace gpuaccept::nccl_scaling {

std::vector<Round> round_robin(int n) {
  std::vector<Round> rounds;
  if (n < 2) return rounds;
  // An odd count gets a phantom player m-1; whoever meets it sits the round out.
  const int m = n % 2 == 0 ? n : n + 1;
  // Player m-1 stays put; the others rotate through the slots 0..m-2.
  for (int r = 0; r < m - 1; ++r) {
    Round round;
    for (int k = 0; k < m / 2; ++k) {
      const int a = k == 0 ? m - 1 : (r + k) % (m - 1);
      const int b = (r - k + (m - 1)) % (m - 1);
      if (a >= n || b >= n) continue;  // the phantom's opponent sits out
      round.emplace_back(std::min(a, b), std::max(a, b));
    }
    std::sort(round.begin(), round.end());
    rounds.push_back(std::move(round));
  }
  return rounds;
}

}  // namespace gpuaccept::nccl_scaling
