// The token embedding's gradient, kept as rows of the tokens a step used.
//
// The embedding is tied: wte's gradient has two parts. The output projection's part is
// dense and complete at the very start of the backward pass, so its all-reduce (the
// first bucket, ../grad_buckets.h) overlaps the whole pass. The token embedding's part
// comes last, from the rows of the tokens in the step's batches only. Reducing the whole
// (V, C) matrix for it would put 154 MB (GPT-2 124M, fp32) after the last layer, where
// nothing overlaps it. Here it is gathered instead into one row per token that any rank
// of the communicator used this step: each rank marks its tokens, a max all-reduce of
// the marks gives the same union everywhere, and the rows are numbered in token order.
// After the all-reduce, add_into() adds the rows to wte's gradient.
//
// Per step: clear_marks(), mark() every token of every micro-batch, plan() before the
// first forward, wait() before each backward (whose last kernels add into the rows),
// reduced_elements() when the last bucket is launched (after a bounded wait for counted()),
// add_into() after the all-reduce has joined. plan() runs on a stream of its own, beside the
// forward pass (~0.15 ms of small kernels, mostly the one-block numbering, that would
// otherwise delay it).
#pragma once

#include <cstddef>
#include <span>

#include <nccl.h>

#include "cuda/cuda_handles.h"

namespace gpuaccept::ddp::gpu {

class EmbeddingRows {
 public:
  EmbeddingRows(int vocab, int channels);  // vocab: rows of wte (padded)

  void clear_marks();
  void mark(std::span<const int> tokens);  // token ids in [0, vocab)
  // The union of the marks over comm (nullptr: this rank's alone), the token-to-row map and
  // zeroed rows, on the rows' own stream after the work enqueued so far on `stream`.
  void plan(ncclComm_t comm, cudaStream_t stream);
  // `stream` waits for plan()'s work.
  void wait(cudaStream_t stream) const;

  float* rows() const { return rows_.get(); }                    // (rows, C) fp32
  const int* row_of_token() const { return row_of_token_.get(); }  // (vocab), -1: no row
  // Done once plan()'s work is, and with it the count on the host.
  const CudaEvent& counted() const { return counted_; }
  // Elements of the rows in use (rows x C); only after counted() has completed.
  std::size_t reduced_elements() const;
  // dwte[token of row r] += rows[r], for every row in use.
  void add_into(float* dwte, cudaStream_t stream) const;

 private:
  int vocab_, channels_;
  PinnedBuffer<unsigned char> marks_;
  DeviceBuffer<unsigned char> present_;
  DeviceBuffer<int> row_of_token_, token_of_row_, count_;
  PinnedBuffer<int> host_count_;
  DeviceBuffer<float> rows_;
  CudaStream stream_;
  CudaEvent queued_, counted_;
};

}  // namespace gpuaccept::ddp::gpu
