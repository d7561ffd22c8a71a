// Samples one GPU through NVML on a thread of its own, every `period` while it is switched on:
// what the GPU ran at (clocks, power, temperatures, clock-event reasons) while the caller's work
// kept it busy. The training phases switch it on for their timed steps only, so that a pause
// (a checkpoint being written, the first steps) does not count. NVML is thread-safe; a query it
// refuses leaves that reading out of the sample (hw/nvml_health.h).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "hw/gpu_sample_summary.h"
#include "hw/nvml.h"
#include "hw/nvml_health.h"

namespace gpuaccept {

class NvmlSampler {
 public:
  NvmlSampler(Nvml::Device device, std::chrono::milliseconds period);
  ~NvmlSampler();  // stops the thread and waits for it
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  void on();   // from now, a sample every period
  void off();  // none until on() again
  GpuSampleSummary summary() const;  // the samples so far

 private:
  void loop();

  const NvmlHealth health_;
  const Nvml::Device device_;
  const std::chrono::milliseconds period_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool on_ = false, stop_ = false;
  GpuSampleSummary summary_;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace gpuaccept
