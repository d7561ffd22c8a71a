// Where AdamW's one launch over a flat buffer decays (train/optimizer_kernels.h, DecaySpans):
// neighbours that decay alike merge, and what the kernel could not walk is refused.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "train/optimizer_kernels.h"

using namespace gpuaccept::train;

TEST_CASE("tensors that decay alike merge into one span") {
  // ddp's order: wte, wpe, ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb,
  // fcprojw, fcprojb, lnfw, lnfb; the matrices and embeddings decay.
  const bool decays[] = {true, true, false, false, true, false, true, false,
                         false, false, true, false, true, false, false, false};
  DecaySpans spans;
  std::size_t end = 0;
  for (bool d : decays) spans.add(end += 10, d);
  REQUIRE(spans.count == 10);
  CHECK(spans.end[0] == 20);  // wte and wpe
  CHECK(spans.decays[0]);
  CHECK(spans.end[1] == 40);  // ln1w and ln1b
  CHECK_FALSE(spans.decays[1]);
  CHECK(spans.end[6] == 110);  // attprojb, ln2w, ln2b
  CHECK(spans.end[9] == 160);  // fcprojb, lnfw, lnfb: the last ends at the buffer's end
  CHECK_FALSE(spans.decays[9]);
}

TEST_CASE("more spans than the kernel walks, or spans out of order, are refused") {
  DecaySpans spans;
  for (int s = 0; s < kMaxDecaySpans; ++s) spans.add(static_cast<std::size_t>(s + 1), s % 2 == 0);
  CHECK(spans.count == kMaxDecaySpans);
  CHECK_THROWS_AS(spans.add(100, spans.decays[kMaxDecaySpans - 1] ? false : true), std::invalid_argument);
  spans.add(200, spans.decays[kMaxDecaySpans - 1]);  // alike: merged, still room
  CHECK(spans.end[kMaxDecaySpans - 1] == 200);

  DecaySpans backwards;
  backwards.add(10, true);
  CHECK_THROWS_AS(backwards.add(5, false), std::invalid_argument);
  CHECK_THROWS_AS(backwards.add(5, true), std::invalid_argument);  // a merge would shrink the span
  CHECK(backwards.end[0] == 10);
}
