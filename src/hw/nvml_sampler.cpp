#include "hw/nvml_sampler.h"

namespace gpuaccept {

NvmlSampler::NvmlSampler(Nvml::Device device, std::chrono::milliseconds period)
    : health_(Nvml::instance()), device_(device), period_(period), thread_([this] { loop(); }) {}

NvmlSampler::~NvmlSampler() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void NvmlSampler::on() {
  {
    const std::lock_guard lock(mutex_);
    on_ = true;
  }
  wake_.notify_all();
}

void NvmlSampler::off() {
  const std::lock_guard lock(mutex_);
  on_ = false;
}

GpuSampleSummary NvmlSampler::summary() const {
  const std::lock_guard lock(mutex_);
  return summary_;
}

// The period runs on while the sampler is switched off and on between steps (the training
// phases do so around every step): a sample every period, taken only while it is on.
void NvmlSampler::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (!on_) {
      wake_.wait(lock, [this] { return on_ || stop_; });
      continue;
    }
    lock.unlock();
    const GpuSample sample = health_.sample(device_);  // NVML's calls outside the lock
    lock.lock();
    if (on_) summary_.add(sample);
    wake_.wait_for(lock, period_, [this] { return stop_; });
  }
}

}  // namespace gpuaccept
