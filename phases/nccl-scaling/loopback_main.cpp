// gpuaccept-nccl-loopback: the child of nccl-scaling's hca_loopback step (hca_loopback.h).
// Started by a rank with NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1 in its environment, it
// joins the node's other children in one NCCL communicator (the id on its command line), runs
// all_reduce float of --bytes: --warmup untimed, --iters timed between two CUDA events, then one
// verified the way the sweep verifies (expected.h), and prints one JSON line:
//   {"time_us": <per operation>, "wrong": <elements>, "transports": "", "error": ""}
// Not for operators: nccl-scaling starts it, with a time limit, and reads the line back.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include "nccl-scaling/expected.h"
#include "nccl-scaling/hca_loopback.h"
#include "nccl-scaling/verify.h"

using namespace gpuaccept::nccl_scaling;

namespace {

void cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(rc)));
}
void nccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) throw std::runtime_error(fmt::format("{}: {}", what, ncclGetErrorString(rc)));
}

const char* arg(int argc, char** argv, const char* name) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == name) return argv[i + 1];
  throw std::runtime_error(fmt::format("missing {}", name));
}

}  // namespace

int main(int argc, char** argv) {
  LoopbackAnswer answer;
  try {
    ncclUniqueId id;
    if (!from_hex(arg(argc, argv, "--id"), &id, sizeof id)) throw std::runtime_error("--id: not a NCCL id");
    const int rank = std::atoi(arg(argc, argv, "--rank"));
    const int nranks = std::atoi(arg(argc, argv, "--nranks"));
    const std::size_t bytes = std::strtoull(arg(argc, argv, "--bytes"), nullptr, 10);
    const int warmup = std::atoi(arg(argc, argv, "--warmup"));
    const int iters = std::atoi(arg(argc, argv, "--iters"));
    if (nranks < 2 || rank < 0 || rank >= nranks || bytes < sizeof(float) || iters < 1 || warmup < 0)
      throw std::runtime_error("bad arguments");
    cuda(cudaSetDevice(std::atoi(arg(argc, argv, "--device"))), "cudaSetDevice");
    ncclComm_t comm;
    nccl(ncclCommInitRank(&comm, nranks, id, rank), "ncclCommInitRank");
    const std::size_t count = bytes / sizeof(float);
    void *send = nullptr, *recv = nullptr;
    unsigned long long* wrong = nullptr;
    cuda(cudaMalloc(&send, count * sizeof(float)), "cudaMalloc");
    cuda(cudaMalloc(&recv, count * sizeof(float)), "cudaMalloc");
    cuda(cudaMalloc(&wrong, sizeof *wrong), "cudaMalloc");
    cudaStream_t stream;
    cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
    ExpectArgs expect;
    expect.coll = CollId::AllReduce;
    expect.rank = rank;
    expect.nranks = nranks;
    expect.root = 0;
    expect.count = count;
    expect.stride = sum_stride(nranks);
    fill_input(send, count, Dtype::Float, expect, rank, stream);
    for (int i = 0; i < warmup; ++i) nccl(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
    cudaEvent_t start, stop;
    cuda(cudaEventCreate(&start), "cudaEventCreate");
    cuda(cudaEventCreate(&stop), "cudaEventCreate");
    cuda(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int i = 0; i < iters; ++i) nccl(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
    cuda(cudaEventRecord(stop, stream), "cudaEventRecord");
    cuda(cudaStreamSynchronize(stream), "the timed all-reduces");
    float ms = 0;
    cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    answer.time_us = 1000.0 * ms / iters;
    // Verified as the sweep verifies: a poisoned output, one more operation, every element counted.
    poison(recv, count * sizeof(float), stream);
    cuda(cudaMemsetAsync(wrong, 0, sizeof *wrong, stream), "cudaMemsetAsync");
    nccl(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
    count_wrong(recv, count, Dtype::Float, expect, wrong, stream);
    unsigned long long host_wrong = 0;
    cuda(cudaMemcpyAsync(&host_wrong, wrong, sizeof host_wrong, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    cuda(cudaStreamSynchronize(stream), "the verified all-reduce");
    answer.wrong = static_cast<long long>(host_wrong);
    nccl(ncclCommDestroy(comm), "ncclCommDestroy");
  } catch (const std::exception& e) {
    answer.error = e.what();
  }
  std::printf("%s\n", loopback_answer_text(answer).c_str());
  return answer.error.empty() ? 0 : 1;
}
