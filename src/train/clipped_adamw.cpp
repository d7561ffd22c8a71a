#include "train/clipped_adamw.h"

#include "cuda/cuda_check.h"
#include "train/learning_check.h"

namespace gpuaccept::train {

ClippedAdamW::ClippedAdamW(std::size_t n)
    : m_(n), v_(n), sumsq_(1), partials_(kNormPartials), scale_(1), norm_(1), host_norm_(1) {}

void ClippedAdamW::reset(cudaStream_t stream) {
  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(m_.get(), 0, m_.bytes(), stream));
  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(v_.get(), 0, v_.bytes(), stream));
}

void ClippedAdamW::clip(const float* grad, std::size_t n, float max_norm, cudaStream_t stream) {
  sum_squares(grad, n, stream);
  clip_from_sum(max_norm, stream);
}

void ClippedAdamW::sum_squares(const float* grad, std::size_t n, cudaStream_t stream) {
  sum_of_squares(sumsq_.get(), partials_.get(), grad, n, stream);
}

void ClippedAdamW::clip_from_sum(float max_norm, cudaStream_t stream) {
  clip_scale(scale_.get(), norm_.get(), sumsq_.get(), max_norm, stream);
}

void ClippedAdamW::resize(std::size_t n, cudaStream_t stream) {
  if (n == m_.size()) return;
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));  // the old moments' last users
  m_ = DeviceBuffer<float>(n);
  v_ = DeviceBuffer<float>(n);
  reset(stream);
}

void ClippedAdamW::update(float* master, bf16* params, const float* grad, std::size_t offset, std::size_t n,
                          const AdamW& h, cudaStream_t stream) {
  adamw_update(master, params, m_.get() + offset, v_.get() + offset, grad, scale_.get(), n, h, stream);
}

void ClippedAdamW::update_all(float* master, bf16* params, const float* grad, const AdamW& h, const DecaySpans& spans,
                              cudaStream_t stream) {
  adamw_update(master, params, m_.get(), v_.get(), grad, scale_.get(), size(), h, spans, stream);
}

void ClippedAdamW::fetch_norm(cudaStream_t stream) {
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(host_norm_.get(), norm_.get(), sizeof(float), cudaMemcpyDeviceToHost, stream));
}

double ClippedAdamW::warmed_up(double lr, int t, int warmup) { return LearningSchedule{lr, warmup}.lr_at(t); }

}  // namespace gpuaccept::train
