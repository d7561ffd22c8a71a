// Samples one GPU through NVML on a thread of its own, every `period` while it is switched on:
// what the GPU ran at (clocks, power, temperatures, clock-event reasons) while the caller's work
// kept it busy. The training phases switch it on for their timed steps only, so that a pause
// (a checkpoint being written, the first steps) does not count. NVML is thread-safe; a query it
// refuses leaves that reading out of the sample (hw/nvml_health.h).
//
// A GPU that has fallen off the bus can hold an NVML call for seconds or for good. The thread
// shares its state with the sampler through a shared_ptr, so the destructor waits for it a
// bounded time and then leaves it behind: the phase goes on to record and report, not hang.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "hw/gpu_sample_summary.h"
#include "hw/nvml.h"

namespace gpuaccept {

class NvmlSampler {
 public:
  static constexpr std::chrono::seconds kStopWait{5};

  NvmlSampler(Nvml::Device device, std::chrono::milliseconds period);
  // Any source of samples (a test's, one that blocks like a lost GPU's NVML).
  NvmlSampler(std::function<GpuSample()> sample, std::chrono::milliseconds period,
              std::chrono::milliseconds stop_wait = kStopWait);
  ~NvmlSampler();  // stops the thread: joined, or left behind after stop_wait stuck in a sample
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  void on();   // from now, a sample every period
  void off();  // none until on() again
  GpuSampleSummary summary() const;  // the samples so far

 private:
  struct State;  // what the thread and the sampler share (nvml_sampler.cpp)
  static void sample_until_stopped(const std::shared_ptr<State>& s);
  std::shared_ptr<State> state_;
  std::chrono::milliseconds stop_wait_;
  std::thread thread_;
};

}  // namespace gpuaccept
