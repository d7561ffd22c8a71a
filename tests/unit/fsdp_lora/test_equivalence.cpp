// The equivalence check's arithmetic (equivalence.h): which shards are replayed, the loss
// curves compared, the relative L2 distance of LoRA vectors.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "fsdp-lora/equivalence.h"

using namespace gpuaccept::fsdp;

TEST_CASE("equivalence: each rank reads its own shards, the replay reads them all in rank order", "[fsdp][equivalence]") {
  CHECK(rank_shards(0, 1) == std::vector<int>{0});
  CHECK(rank_shards(3, 2) == std::vector<int>{6, 7});
  CHECK(replay_shards(2, 1) == std::vector<int>{0, 1});
  CHECK(replay_shards(3, 2) == std::vector<int>{0, 1, 2, 3, 4, 5});
  // The replay's dropout index of each shard is the one its rank used for that micro-batch.
  const std::vector<int> replay = replay_shards(4, 3);
  for (int r = 0; r < 4; ++r)
    for (int m = 0; m < 3; ++m) {
      const int shard = replay[static_cast<std::size_t>(r * 3 + m)];
      CHECK(shard == rank_shards(r, 3)[static_cast<std::size_t>(m)]);
      CHECK(dropout_micro(shard, 3) == m);
    }
}

TEST_CASE("equivalence: loss curves compared step by step, the worst step named", "[fsdp][equivalence]") {
  const std::vector<double> a{10.0, 9.5, 9.0}, b{10.001, 9.49, 9.0};
  const LossComparison c = compare_losses(a, b);
  CHECK(c.compared == 3);
  CHECK(c.worst_step == 2);
  CHECK(c.worst == Approx(0.01));

  // Identical curves: worst 0 at step 1.
  const LossComparison same = compare_losses(a, a);
  CHECK(same.worst == 0);
  CHECK(same.worst_step == 1);

  // A shorter curve (a run that stopped) compares what both have.
  const std::vector<double> short_b{10.0};
  CHECK(compare_losses(a, short_b).compared == 1);
  CHECK(compare_losses({}, a).compared == 0);
  CHECK(compare_losses({}, a).worst_step == 0);

  // A non-finite loss is the worst difference there is.
  const std::vector<double> nan_b{10.0, NAN, 100.0};
  const LossComparison n = compare_losses(a, nan_b);
  CHECK(n.worst_step == 2);
  CHECK(std::isinf(n.worst));
}

TEST_CASE("equivalence: relative L2 of LoRA vectors", "[fsdp][equivalence]") {
  const std::vector<float> b{3, 4}, a{3, 4.5f};
  CHECK(relative_l2(a, b) == Approx(0.1));
  CHECK(relative_l2(b, b) == 0);
  const std::vector<float> zero{0, 0};
  CHECK(relative_l2(zero, zero) == 0);
  CHECK(std::isinf(relative_l2(b, zero)));
  const std::vector<float> bad{3, std::numeric_limits<float>::quiet_NaN()};
  CHECK(std::isinf(relative_l2(bad, b)));
  const std::vector<float> three{1, 2, 3};
  CHECK_THROWS_AS(relative_l2(three, b), std::invalid_argument);

  // Of the updates since a base: the same weights' tiny difference is large against a small update.
  const std::vector<float> base{1, 1}, w1{1.01f, 1}, w2{1.011f, 1};
  CHECK(relative_l2(w2, w1) < 1e-3);
  CHECK(relative_l2_of_updates(w2, w1, base) == Approx(0.1).epsilon(1e-3));
  CHECK_THROWS_AS(relative_l2_of_updates(w2, w1, three), std::invalid_argument);
}
