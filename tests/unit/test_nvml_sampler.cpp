// NvmlSampler (src/hw/nvml_sampler.h): samples while on, none while off, and stops cleanly.
// Without a GPU (CI) NVML answers nothing, so each sample is empty: the switching is what is
// tested here; tests/gpu/ddp_vs_torch.sh shows the readings on a GPU.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "hw/nvml_sampler.h"

using gpuaccept::NvmlSampler;
using namespace std::chrono_literals;

TEST_CASE("the sampler samples only while it is on", "[hw][nvml]") {
  NvmlSampler sampler(nullptr, 5ms);  // no device: NVML refuses every query, where it is loaded at all
  std::this_thread::sleep_for(50ms);
  CHECK(sampler.summary().samples() == 0);  // off at first

  const auto started = std::chrono::steady_clock::now();
  sampler.on();
  std::this_thread::sleep_for(100ms);
  sampler.off();
  const auto elapsed = std::chrono::steady_clock::now() - started;
  const int on = sampler.summary().samples();
  CHECK(on >= 2);  // about 20 at 5 ms; two leaves room for a loaded machine
  CHECK(on <= elapsed / 5ms + 1);  // never faster than the period (the first at once)

  std::this_thread::sleep_for(50ms);
  CHECK(sampler.summary().samples() == on);  // off: nothing more, not even a sample in flight

  sampler.on();
  std::this_thread::sleep_for(30ms);
  sampler.off();
  CHECK(sampler.summary().samples() > on);
}  // the destructor stops and joins the thread: the test ends rather than hangs
