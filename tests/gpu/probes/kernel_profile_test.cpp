// kernel_profile's window and idle-gap arithmetic on made-up timelines, CPU only: the library is
// one translation unit, included here so its functions in the anonymous namespace are reachable.
// Times are in ns on one GPU clock, as CUPTI's records give them.
#include <catch2/catch.hpp>

#include "kernel_profile.cpp"

namespace {

// Starts every test from empty records; names are indexes into g_names by first use.
int name(const std::string& n) {
  auto [it, added] = g_name_index.try_emplace(n, static_cast<int>(g_names.size()));
  if (added) g_names.push_back(n);
  return it->second;
}

void clear_records() {
  g_names.clear();
  g_name_index.clear();
  g_launches.clear();
  g_others.clear();
  g_call_end.clear();
}

// Steps of `step_ns` on stream 7: a marker kernel ("step_marker", 10 us) at each step's start,
// then "work" until 60 us before the next step (the 60 us idle at each step boundary).
void add_steps(int steps, unsigned long long step_ns) {
  for (int s = 0; s < steps; ++s) {
    const unsigned long long t = 1'000'000 + static_cast<unsigned long long>(s) * step_ns;
    g_launches.push_back({name("step_marker"), t, t + 10'000, 7, static_cast<unsigned>(2 * s + 1)});
    g_launches.push_back({name("work"), t + 10'000, t + step_ns - 60'000, 7, static_cast<unsigned>(2 * s + 2)});
  }
}

// The busiest stream's gaps over the whole steps between the marker's launches.
struct Walked {
  Window window;
  std::vector<Launch> kept;
  std::map<std::pair<int, int>, Gap> gaps;
  unsigned stream = 0;
  double idle = 0, host = 0;
};

Walked walk_steps() {
  Walked w;
  w.window = choose_window(0, nullptr, "step_marker");
  for (const auto& k : g_launches)
    if (k.start >= w.window.from && k.start < w.window.to) w.kept.push_back(k);
  w.gaps = busiest_stream_gaps(w.kept, {}, w.window.closing, &w.stream, &w.idle, &w.host);
  return w;
}

}  // namespace

TEST_CASE("the step window spans whole steps and leaves out the last step and what follows") {
  clear_records();
  add_steps(10, 1'000'000);  // 1 ms steps
  // After training: a long kernel that no step counts (the weights' checks).
  g_launches.push_back({name("after_training"), 20'000'000, 30'000'000, 7, 99});
  const Window w = choose_window(0, nullptr, "step_marker");
  CHECK(w.steps == 9);
  CHECK(w.from == 1'000'000);
  CHECK(w.to == 10'000'000);  // the last marker's start
  REQUIRE(w.closing != nullptr);

  // With a window of 3.5 ms: the first marker at or after to - 3.5 ms, so 3 whole steps.
  const Window w3 = choose_window(3.5e6, "0.0035", "step_marker");
  CHECK(w3.steps == 3);
  CHECK(w3.from == 7'000'000);
}

TEST_CASE("the idle gaps of whole steps add up with the kernels to the steps' length") {
  clear_records();
  add_steps(5, 1'000'000);
  const Walked w = walk_steps();
  CHECK(w.stream == 7);
  double kernels = 0;
  for (const auto& k : w.kept) kernels += static_cast<double>(k.end - k.start);
  // Four steps: each 60 us idle before the next marker, the last one before the closing marker.
  CHECK(w.idle == Approx(4 * 60'000.0));
  CHECK(kernels + w.idle == Approx(static_cast<double>(w.window.to - w.window.from)));
  CHECK(w.gaps.at({name("work"), name("step_marker")}).count == 4);
  CHECK(w.host == 0);  // no launch calls recorded: nothing is the host's
}

TEST_CASE("a gap before the launching call returned is the host's, up to that return") {
  clear_records();
  add_steps(3, 1'000'000);
  // The second step's marker (correlation 3) starts 60 us after the work before it ended; its
  // launch call returned 40 us after that work ended: 40 us of the gap are the host's.
  const unsigned long long work_end = 1'000'000 + 1'000'000 - 60'000;
  g_call_end[3] = work_end + 40'000;
  // The third marker's call returned long before: its gap is the stream's own.
  g_call_end[5] = 1'500'000;
  const Walked w = walk_steps();
  CHECK(w.idle == Approx(2 * 60'000.0));
  CHECK(w.host == Approx(40'000.0));
}

TEST_CASE("too few markers fall back to the window by time") {
  clear_records();
  add_steps(1, 1'000'000);
  const Window w = choose_window(0, nullptr, "step_marker");
  CHECK(w.steps == 0);
  CHECK(w.closing == nullptr);
  CHECK(w.what == "whole run");
}
