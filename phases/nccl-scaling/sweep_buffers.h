// The device and pinned memory one rank's sweep measures with, allocated once at the
// largest size (nccl-tests does the same): send and receive buffers, the wrong-element
// counter, the per-row statistics gathered over a communicator, and the end-of-step sync.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "cuda/cuda_handles.h"

namespace gpuaccept::nccl_scaling {

class SweepBuffers {
 public:
  // bytes: each of send and recv; max_group: the largest communicator (statistics gather).
  // Zeroed on `stream`, which this waits for.
  SweepBuffers(std::size_t bytes, int max_group, cudaStream_t stream);

  char* send() const { return static_cast<char*>(send_.get()); }
  char* recv() const { return static_cast<char*>(recv_.get()); }
  std::size_t bytes() const { return bytes_; }
  unsigned long long* wrong_counter() const { return wrong_dev_.get(); }
  unsigned long long* wrong_host() const { return wrong_host_.get(); }
  double* stats_send() const { return stats_send_dev_.get(); }
  double* stats_recv() const { return stats_recv_dev_.get(); }
  double* stats_host() const { return stats_host_.get(); }  // [0..3] mine, then 4 per rank
  float* sync_value() const { return sync_dev_.get(); }

 private:
  std::size_t bytes_;
  DeviceBuffer<char> send_, recv_;
  DeviceBuffer<unsigned long long> wrong_dev_;
  PinnedBuffer<unsigned long long> wrong_host_;
  DeviceBuffer<double> stats_send_dev_, stats_recv_dev_;
  PinnedBuffer<double> stats_host_;
  DeviceBuffer<float> sync_dev_;
};

}  // namespace gpuaccept::nccl_scaling
