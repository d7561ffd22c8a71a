// NvmlSampler (src/hw/nvml_sampler.h): samples while on, none while off, and stops cleanly, also
// when a sample never returns.
// Without a GPU (CI) NVML answers nothing, so each sample is empty: the switching is what is
// tested here; tests/gpu/ddp_vs_torch.sh shows the readings on a GPU.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
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

TEST_CASE("a sample that never returns (a lost GPU's NVML) does not hang the sampler's end", "[hw][nvml]") {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto entered = std::make_shared<std::atomic<bool>>(false);
  const auto started = std::chrono::steady_clock::now();
  {
    NvmlSampler sampler(
        [released, entered] {
          entered->store(true);
          released.wait();
          return gpuaccept::GpuSample{};
        },
        5ms, 100ms);
    sampler.on();
    while (!entered->load()) std::this_thread::sleep_for(1ms);
  }  // the destructor waits 100 ms for the thread, then leaves it behind
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  release.set_value();  // the thread left behind returns to its own state and ends
  std::this_thread::sleep_for(50ms);
}
