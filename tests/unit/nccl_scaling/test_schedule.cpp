// The round-robin schedule of the pairwise tests: every pair exactly once, nobody twice in
// a round, the right number of rounds for even and odd counts.
#include <catch2/catch.hpp>

#include <set>

#include "nccl-scaling/schedule.h"

using namespace gpuaccept::nccl_scaling;

TEST_CASE("round robin: every pair once, no one twice per round") {
  for (int n = 0; n <= 17; ++n) {
    INFO("n=" << n);
    const auto rounds = round_robin(n);
    if (n < 2) {
      CHECK(rounds.empty());
      continue;
    }
    CHECK(rounds.size() == static_cast<std::size_t>(n % 2 == 0 ? n - 1 : n));
    std::set<std::pair<int, int>> seen;
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (const auto& [a, b] : round) {
        CHECK(a < b);
        CHECK(a >= 0);
        CHECK(b < n);
        CHECK(busy.insert(a).second);
        CHECK(busy.insert(b).second);
        CHECK(seen.insert({a, b}).second);  // not met before
      }
      // Everyone plays each round, except one player per round when n is odd.
      CHECK(busy.size() == static_cast<std::size_t>(n % 2 == 0 ? n : n - 1));
    }
    CHECK(seen.size() == static_cast<std::size_t>(n * (n - 1) / 2));
  }
}

TEST_CASE("round robin: the odd player out changes every round") {
  const auto rounds = round_robin(5);
  std::set<int> sat_out;
  for (const auto& round : rounds) {
    std::set<int> busy;
    for (const auto& [a, b] : round) busy.insert({a, b});
    for (int p = 0; p < 5; ++p)
      if (!busy.count(p)) sat_out.insert(p);
  }
  CHECK(sat_out.size() == 5);
}
