// The step figures both training phases record: medians past the warm-up, the replica hash,
// the MFU peak by GPU name (train/step_timing.h, train/weights_hash.h, train/gpu_peak.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "train/gpu_peak.h"
#include "train/step_timing.h"
#include "train/weights_hash.h"

using namespace gpuaccept::train;

TEST_CASE("timings are medians over the steps after the warm-up") {
  std::vector<StepRecord> steps;
  for (int i = 1; i <= 6; ++i) {
    StepRecord s;
    s.step = i;
    s.step_ms = i == 1 ? 500.0 : 40.0 + i;  // step 1 pays for plans and connections
    s.forward_ms = 10.0 * i;
    s.wall_ms = s.step_ms + 1.0;
    steps.push_back(s);
  }
  const StepRecord m = median_step(steps, 1);
  CHECK(m.step_ms == Approx(44.0));  // 42, 43, 44, 45, 46
  CHECK(m.forward_ms == Approx(40.0));
  CHECK(m.wall_ms == Approx(45.0));
  // Skipping every step still leaves the last one rather than nothing.
  CHECK(median_step(steps, 10).step_ms == Approx(46.0));
  CHECK(std::isnan(median_step({}, 0).step_ms));
}

TEST_CASE("the weight hash tells equal weights from a single flipped bit") {
  std::vector<float> a(1001);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.01f * static_cast<float>(i);
  std::vector<float> b = a;
  CHECK(weights_hash(a) == weights_hash(b));
  b[777] = std::nextafter(b[777], 1.0f);  // one ulp: the last mantissa bit
  CHECK(weights_hash(a) != weights_hash(b));
  b = a;
  b[1000] = -b[1000];  // the odd tail past the last full 8 bytes counts too
  CHECK(weights_hash(a) != weights_hash(b));
}

TEST_CASE("MFU peaks by GPU name, unknown GPUs get none") {
  CHECK(bf16_peak_tflops("NVIDIA H100 80GB HBM3") == Approx(989.4));
  CHECK(bf16_peak_tflops("NVIDIA H200") == Approx(989.4));
  CHECK(bf16_peak_tflops("NVIDIA A100-SXM4-80GB") == Approx(312));
  CHECK(bf16_peak_tflops("Tesla T4") == 0);
}
