#include "nccl-scaling/sweep_buffers.h"

#include "cuda/cuda_check.h"

namespace gpuaccept::nccl_scaling {

SweepBuffers::SweepBuffers(std::size_t bytes, int max_group, cudaStream_t stream)
    : bytes_(bytes),
      send_(bytes),
      recv_(bytes),
      wrong_dev_(2),
      wrong_host_(2),
      stats_send_dev_(4),
      stats_recv_dev_(4 * static_cast<std::size_t>(max_group)),
      stats_host_(4 + 4 * static_cast<std::size_t>(max_group)),
      sync_dev_(1) {
  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(send_.get(), 0, bytes_, stream));
  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(recv_.get(), 0, bytes_, stream));
  GPUACCEPT_CUDA_CHECK(cudaMemsetAsync(sync_dev_.get(), 0, sizeof(float), stream));
  GPUACCEPT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace gpuaccept::nccl_scaling
