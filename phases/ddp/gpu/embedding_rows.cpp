#include "ddp/gpu/embedding_rows.h"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "cuda/cuda_check.h"
#include "ddp/gpu/kernels.h"

namespace gpuaccept::ddp::gpu {

EmbeddingRows::EmbeddingRows(int vocab, int channels)
    : vocab_(vocab),
      channels_(channels),
      marks_(static_cast<std::size_t>(vocab)),
      present_(static_cast<std::size_t>(vocab)),
      row_of_token_(static_cast<std::size_t>(vocab)),
      token_of_row_(static_cast<std::size_t>(vocab)),
      count_(1),
      host_count_(1),
      rows_(static_cast<std::size_t>(vocab) * static_cast<std::size_t>(channels)) {
  clear_marks();
}

void EmbeddingRows::clear_marks() { std::memset(marks_.get(), 0, marks_.bytes()); }

void EmbeddingRows::mark(std::span<const int> tokens) {
  unsigned char* m = marks_.get();
  for (int t : tokens) {
    if (t < 0 || t >= vocab_) throw std::out_of_range(fmt::format("token id {} outside the vocabulary of {}", t, vocab_));
    m[t] = 1;
  }
}

void EmbeddingRows::plan(ncclComm_t comm, cudaStream_t stream) {
  // After what `stream` has enqueued: the last step's add_into() still reads the rows.
  queued_.record(stream);
  GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(stream_, queued_, 0));
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(present_.get(), marks_.get(), marks_.bytes(), cudaMemcpyHostToDevice, stream_));
  if (comm)
    GPUACCEPT_NCCL_CHECK(ncclAllReduce(present_.get(), present_.get(), static_cast<std::size_t>(vocab_), ncclUint8,
                                       ncclMax, comm, stream_));
  token_rows(row_of_token_.get(), token_of_row_.get(), count_.get(), present_.get(), vocab_, stream_);
  zero_token_rows(rows_.get(), count_.get(), vocab_, channels_, stream_);
  GPUACCEPT_CUDA_CHECK(cudaMemcpyAsync(host_count_.get(), count_.get(), sizeof(int), cudaMemcpyDeviceToHost, stream_));
  counted_.record(stream_);
}

void EmbeddingRows::wait(cudaStream_t stream) const { GPUACCEPT_CUDA_CHECK(cudaStreamWaitEvent(stream, counted_, 0)); }

std::size_t EmbeddingRows::reduced_elements() const {
  return static_cast<std::size_t>(host_count_.get()[0]) * static_cast<std::size_t>(channels_);
}

void EmbeddingRows::add_into(float* dwte, cudaStream_t stream) const {
  add_token_rows(dwte, rows_.get(), token_of_row_.get(), count_.get(), vocab_, channels_, stream);
}

}  // namespace gpuaccept::ddp::gpu
