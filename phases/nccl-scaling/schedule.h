// Round-robin tournament (the circle method): n players in rounds where nobody plays twice
// in a round and every pair meets exactly once. The pairwise tests use it so that each
// node (or GPU) is in at most one pair at a time: a pair's figure is its link's, not the
// link shared with another test. n-1 rounds for even n, n rounds for odd n (one player
// sits out each round).
#pragma once

#include <utility>
#include <vector>

namespace gpuaccept::nccl_scaling {

using Round = std::vector<std::pair<int, int>>;  // (a, b) with a < b

std::vector<Round> round_robin(int n);

}  // namespace gpuaccept::nccl_scaling
