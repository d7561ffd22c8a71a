// Whom the training phases' records are about (issue 39): what rank 0 concludes from every
// rank's figures (the loss curve, finiteness, replicas, throughput per GPU and in total, step
// times, scaling) names no node, so a FAIL there drains none; what a rank measured on its own
// GPU names its node.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "../fresh_dir.h"
#include "results/result_writer.h"
#include "train/run_records.h"
#include "train/slowest_alone.h"
#include "world/world.h"

using namespace gpuaccept;

TEST_CASE("training records: rank 0's conclusions are the job's, a rank's own figures its node's", "[train][records]") {
  auto world = make_single_world();
  ResultWriter out(*world, "ddp", testing::fresh_dir("run-records"), {});
  // A run whose loss went NaN at step 3: loss_curve for the finite steps, finite FAILs.
  const std::size_t finite_steps = train::record_loss_curve(out, {10.9, 10.3, NAN, NAN}, {{3.0}});
  CHECK(finite_steps == 2);
  train::record_replicas(*world, out, {1.0f, 2.0f}, "ddp", "weights", "values");
  train::record_step_figures(out, 1000, 1000, train::StepRecord{}, {{"scale", "all"}, {"gpus", "1"}});
  train::record_vs_slowest(out, train::SlowestAlone{}, *world, 1000, {});  // one rank: nothing to record
  const Record& mine = out.measure("throughput", "tokens_per_s", 1000, "tokens/s", {{"scale", "single_gpu"}});

  int job_level = 0;
  for (const Record& r : out.records()) {
    if (&r == &mine) continue;
    INFO(r.test << " " << r.metric);
    CHECK(r.rank == kJobLevel);
    CHECK(r.node.empty());
    CHECK_FALSE(blames_node(r));
    ++job_level;
  }
  CHECK(job_level == 2 + 1 + 1 + 2 + 6);  // loss_curve x2, finite, replicas, throughput x2, step_time x6
  const auto finite = std::find_if(out.records().begin(), out.records().end(),
                                   [](const Record& r) { return r.test == "finite"; });
  REQUIRE(finite != out.records().end());
  CHECK(finite->status == Status::Fail);  // a FAIL that drains no node: the job's

  CHECK(mine.rank == 0);
  CHECK(mine.node == world->hostname());
  CHECK(blames_node(mine));
  Record& peer = out.check("training", Status::Fail, "a peer did not arrive");
  peer.params[kCauseParam] = kCausePeer;
  CHECK_FALSE(blames_node(peer));  // a survivor of a lost peer
}

TEST_CASE("a GPU's throughput note says what NVML showed over the timed steps, or why nothing", "[train][records]") {
  GpuSampleSummary none;
  CHECK(train::timed_gpu_note(none, 0) == "this GPU's clocks not sampled: no timed step");
  CHECK(train::timed_gpu_note(none, 50) == "this GPU's clocks not sampled: NVML did not find it");
  GpuSampleSummary seen;
  GpuSample s;
  s.sm_clock_mhz = 1650;
  s.power_mw = 673'000;
  s.clock_events = 0x4;
  seen.add(s);
  CHECK(train::timed_gpu_note(seen, 55) ==
        "this GPU over the 55 timed steps: SM clock 1650-1650 MHz (median 1650), power 673 W mean, clock-event "
        "reasons: sw_power_cap in 1 of 1 samples");
}
