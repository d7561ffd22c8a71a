#include "hw/nvml_sampler.h"

#include <condition_variable>
#include <mutex>

#include "common/log.h"
#include "hw/nvml_health.h"

namespace gpuaccept {

struct NvmlSampler::State {
  State(std::function<GpuSample()> s, std::chrono::milliseconds p) : sample(std::move(s)), period(p) {}
  const std::function<GpuSample()> sample;
  const std::chrono::milliseconds period;
  std::mutex mutex;
  std::condition_variable wake;  // on, off or stop changed; the thread finished
  bool on = false, stop = false, finished = false;
  GpuSampleSummary summary;
};

NvmlSampler::NvmlSampler(Nvml::Device device, std::chrono::milliseconds period)
    : NvmlSampler([health = NvmlHealth(Nvml::instance()), device] { return health.sample(device); }, period) {}

NvmlSampler::NvmlSampler(std::function<GpuSample()> sample, std::chrono::milliseconds period,
                         std::chrono::milliseconds stop_wait)
    : state_(std::make_shared<State>(std::move(sample), period)),
      stop_wait_(stop_wait),
      thread_([s = state_] { sample_until_stopped(s); }) {}

// The period runs on while the sampler is switched off and on between steps (the training
// phases do so around every step): a sample every period, taken only while it is on.
void NvmlSampler::sample_until_stopped(const std::shared_ptr<State>& s) {
  std::unique_lock lock(s->mutex);
  while (!s->stop) {
    if (!s->on) {
      s->wake.wait(lock, [&] { return s->on || s->stop; });
      continue;
    }
    lock.unlock();
    const GpuSample sample = s->sample();  // NVML's calls outside the lock
    lock.lock();
    if (s->on) s->summary.add(sample);
    s->wake.wait_for(lock, s->period, [&] { return s->stop; });
  }
  s->finished = true;
  s->wake.notify_all();
}

NvmlSampler::~NvmlSampler() {
  std::unique_lock lock(state_->mutex);
  state_->stop = true;
  state_->wake.notify_all();
  if (state_->wake.wait_for(lock, stop_wait_, [this] { return state_->finished; })) {
    lock.unlock();
    thread_.join();
    return;
  }
  lock.unlock();
  thread_.detach();  // it holds the state: safe whenever its sample returns
  log_error("NVML sampler: a query has not returned in {} ms (a GPU lost?); its thread is left behind",
            stop_wait_.count());
}

void NvmlSampler::on() {
  const std::lock_guard lock(state_->mutex);
  state_->on = true;
  state_->wake.notify_all();
}

void NvmlSampler::off() {
  const std::lock_guard lock(state_->mutex);
  state_->on = false;
}

GpuSampleSummary NvmlSampler::summary() const {
  const std::lock_guard lock(state_->mutex);
  return state_->summary;
}

}  // namespace gpuaccept
